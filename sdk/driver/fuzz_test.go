package driver_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lexicon-fleet/lexicon/sdk/driver"
	driverpb "github.com/lexicon-fleet/lexicon/sdk/driver/proto"
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

// Settings come from an admin, statuses from a driver process: neither parser panics, and each refuses
// with its code.

func FuzzDecodeSettings(f *testing.F) {
	f.Add([]byte(`{"endpoint":"https://x"}`))
	f.Add([]byte(`{"endpoint":1}`))
	f.Add([]byte(`{} []`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v struct {
			Endpoint string `json:"endpoint"`
		}
		if err := driver.DecodeSettings(json.RawMessage(data), &v); err != nil && !errcode.Has(err, errcode.DriverConfigInvalid) {
			t.Fatalf("DecodeSettings refused with %v", err)
		}
	})
}

func FuzzCheckEndpoint(f *testing.F) {
	f.Add("https://api.linode.com/v4")
	f.Add("http://127.0.0.1:1/")
	f.Add("http://[::1]/x")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := driver.CheckEndpoint("endpoint", raw)
		if err != nil {
			if !errcode.Has(err, errcode.DriverConfigInvalid) {
				t.Fatalf("CheckEndpoint refused with %v", err)
			}
			return
		}
		if u.Scheme != "https" && u.Scheme != "http" {
			t.Fatalf("CheckEndpoint accepted scheme %q", u.Scheme)
		}
	})
}

func FuzzFromStatus(f *testing.F) {
	f.Add("cloud.not_found", "no instance", []byte(`{"id":"1"}`), uint32(5))
	f.Add("", "", []byte(`nope`), uint32(14))
	f.Fuzz(func(t *testing.T, code, msg string, details []byte, grpcCode uint32) {
		st := status.New(codes.Code(grpcCode%17), msg)
		if withDetail, err := st.WithDetails(&driverpb.Error{Code: code, Message: msg, DetailsJson: details}); err == nil {
			st = withDetail
		}
		err := driver.FromStatus(st.Err())
		if grpcCode%17 == 0 {
			return // OK carries no error
		}
		if err == nil || errcode.Code(err) == "" {
			t.Fatalf("FromStatus gave %v, want a coded error", err)
		}
	})
}
