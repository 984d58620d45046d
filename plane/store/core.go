package store

import (
	"github.com/lexicon-fleet/lexicon/sdk/errcode"
)

func invalid(field, format string, args ...any) error {
	return errcode.New(errcode.StoreParamInvalid, format, args...).With(errcode.DetailField, field)
}

// Limits of list methods.
const (
	MaxListLimit = 1000
)
