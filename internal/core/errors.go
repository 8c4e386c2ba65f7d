package core

import (
	"errors"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/translate"
)

// blamedError is a Bedrock refusal of the request the translation traced to one of its
// fields (translate.RefusedParam), so the client's error names it.
type blamedError struct {
	err     error
	refusal fault.Failure
}

func (e *blamedError) Error() string { return e.err.Error() }
func (e *blamedError) Unwrap() error { return e.err }

// Failure implements [fault.Classified]: Bedrock's refusal, naming the field.
func (e *blamedError) Failure() fault.Failure { return e.refusal }

// blame marks Bedrock's refusal of the request as invalid with the request field it is
// about, when the translation of the request can tell which (plan is the request's).
func blame(plan *translate.Plan, err error) error {
	var apiErr *bedrock.APIError
	if !errors.As(err, &apiErr) {
		return err
	}
	if f := apiErr.Failure(); f.Kind == fault.KindInvalid {
		if f.Param = translate.RefusedParam(plan, apiErr.Message); f.Param != "" {
			return &blamedError{err: err, refusal: f}
		}
	}
	return err
}
