package redact_test

import (
	"fmt"

	"github.com/lexicon-fleet/lexicon/agent/redact"
)

func ExampleJSON() {
	out, counts, err := redact.JSON([]byte(`{"host":"web-01","addr":"203.0.113.7","admin":"alice@example.com",` +
		`"db":{"password":"hunter2"},"image_digest":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	fmt.Println(counts[redact.IP], counts[redact.Email], counts[redact.Credential], counts.Total())
	// Output:
	// {"host":"web-01","addr":"[redacted:ip]","admin":"…@example.com","db":{"password":"[redacted:credential]"},"image_digest":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
	// 1 1 1 3
}

func ExampleText() {
	out, _ := redact.Text("connecting to postgres://app:s3cret@10.0.0.5:5432/app with TOKEN=abc123")
	fmt.Println(out)
	// Output:
	// connecting to postgres://…@[redacted:ip]:5432/app with TOKEN=[redacted:credential]
}
