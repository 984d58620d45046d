module github.com/santhosh-tekuri/jsonschema/v6

go 1.21

require golang.org/x/text v0.14.0
