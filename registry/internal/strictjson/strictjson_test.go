package strictjson_test

import (
	"errors"
	"testing"

	"github.com/lexicon-fleet/lexicon/registry/internal/strictjson"
)

type target struct {
	Name  string `json:"name"`
	Inner struct {
		N int `json:"n"`
	} `json:"inner"`
}

func TestDecode(t *testing.T) {
	var v target
	if err := strictjson.Decode([]byte(`{"name":"a","inner":{"n":1}}`), 100, &v); err != nil || v.Inner.N != 1 {
		t.Fatalf("good input: %v %+v", err, v)
	}
	var unknown *strictjson.UnknownFieldError
	if err := strictjson.Decode([]byte(`{"name":"a","inner":{"n":1,"evil":2}}`), 100, &v); !errors.As(err, &unknown) || unknown.Field != "evil" {
		t.Fatalf("unknown nested field: %v", err)
	}
	var dup *strictjson.DuplicateKeyError
	if err := strictjson.Decode([]byte(`{"name":"a","name":"b"}`), 100, &v); !errors.As(err, &dup) || dup.Key != "name" {
		t.Fatalf("repeated key: %v", err)
	}
	if err := strictjson.Decode([]byte(`{"Name":"a"}`), 100, &v); !errors.As(err, &unknown) {
		t.Fatalf("case-folded name accepted: %v", err)
	}
	if err := strictjson.Decode([]byte(`{"name":"a"} {}`), 100, &v); err == nil {
		t.Fatal("trailing value accepted")
	}
	if err := strictjson.Decode([]byte(`{"name":"a"}`), 5, &v); !errors.Is(err, strictjson.ErrTooLarge) {
		t.Fatalf("cap: %v", err)
	}
}

func TestDecodeOpen(t *testing.T) {
	var v target
	if err := strictjson.DecodeOpen([]byte(`{"name":"a","extra":[1,{"x":2}],"inner":{"n":1,"more":true}}`), 100, &v); err != nil || v.Name != "a" || v.Inner.N != 1 {
		t.Fatalf("unknown members not skipped: %v %+v", err, v)
	}
	var dup *strictjson.DuplicateKeyError
	if err := strictjson.DecodeOpen([]byte(`{"name":"a","extra":1,"extra":2}`), 100, &v); !errors.As(err, &dup) || dup.Key != "extra" {
		t.Fatalf("repeated unknown key: %v", err)
	}
	if err := strictjson.DecodeOpen([]byte(`{"name":"a"} {}`), 100, &v); err == nil {
		t.Fatal("trailing value accepted")
	}
	if err := strictjson.DecodeOpen([]byte(`{"name":"a"}`), 5, &v); !errors.Is(err, strictjson.ErrTooLarge) {
		t.Fatalf("cap: %v", err)
	}
}
