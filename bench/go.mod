module github.com/lexicon-fleet/lexicon/bench

go 1.26.0

require (
	github.com/extism/go-sdk v1.7.1
	github.com/lexicon-fleet/lexicon v0.0.0
	github.com/tetratelabs/wazero v1.12.0
)

require (
	filippo.io/age v1.3.2 // indirect
	filippo.io/hpke v0.4.0 // indirect
	github.com/dylibso/observe-sdk/go v0.0.0-20240819160327-2d926c5d788a // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20240805132620-81f5be970eca // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/tetratelabs/wabin v0.0.0-20230304001439-f6f874872834 // indirect
	go.opentelemetry.io/proto/otlp v1.3.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/mod v0.43.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

replace github.com/lexicon-fleet/lexicon => ../

replace github.com/tetratelabs/wazero => ../third_party/wazero

replace github.com/santhosh-tekuri/jsonschema/v6 => ../third_party/jsonschema
