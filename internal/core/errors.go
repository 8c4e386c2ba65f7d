package core

import (
	"errors"
	"strconv"
	"strings"

	"github.com/nirmata/llm-gateway/internal/bedrock"
	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/clip"
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

// refused is what a turn answers when Bedrock refused its call: a model Bedrock does not
// know, named as the client named it (unknownModel); else the refusal, with the request
// field it is about when the translation can tell which (blame).
func (s *Service) refused(t *turn, err error) error {
	var apiErr *bedrock.APIError
	if !errors.As(err, &apiErr) {
		return err
	}
	if apiErr.Failure().Reason != fault.ReasonModelNotFound {
		return blame(t.plan, err)
	}
	name, what := t.route.Alias(), ""
	if name != "" {
		what = "(alias of " + clip.Quote(t.model.ID) + ") "
	} else {
		name = t.model.ID
	}
	return s.unknownModel(name, what+"is not a model Bedrock knows: "+clip.String(apiErr.Failure().Message, clip.LogMax), err)
}

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

// modelError is a model name the gateway cannot serve (docs/PROTOCOL.md 4): a 404 naming
// the model, on every surface.
type modelError struct {
	msg string
	// upstream is Bedrock's refusal of the model; nil for a name refused before any call.
	upstream error
}

func (e *modelError) Error() string { return e.msg }
func (e *modelError) Unwrap() error { return e.upstream }

// Failure implements [fault.Classified].
func (e *modelError) Failure() fault.Failure {
	return fault.Failure{Kind: fault.KindNotFound, Message: e.msg, Param: "model", Reason: fault.ReasonModelNotFound}
}

// checkModel refuses, before any call, a model name that is neither an alias nor shaped like
// a Bedrock model id (capabilities.IsModelID): such a name ("gpt-4o") cannot reach a model.
// A name of that shape is left to Bedrock, which knows models the gateway's table does not.
func (s *Service) checkModel(name string) error {
	if s.router.IsAlias(name) || capabilities.IsModelID(name) {
		return nil
	}
	return s.unknownModel(name, "is neither an alias of this gateway nor a Bedrock model id (provider.model, an inference profile such as us.provider.model, or an ARN)", nil)
}

// maxAliasesNamed bounds the aliases an unknown model's message names.
const maxAliasesNamed = 10

// unknownModel is the error of a model name the gateway cannot serve: "model <name> <why>",
// then where to find the names it serves, its aliases among them.
func (s *Service) unknownModel(name, why string, upstream error) error {
	var b strings.Builder
	b.WriteString("model ")
	b.WriteString(clip.Quote(name))
	b.WriteString(" ")
	b.WriteString(why)
	b.WriteString("; GET /v1/models lists the models this gateway serves")
	aliases := s.router.Aliases()
	if len(aliases) == 0 {
		b.WriteString(" (it has no aliases)")
	}
	for i, a := range aliases {
		if i == maxAliasesNamed {
			b.WriteString(" and " + strconv.Itoa(len(aliases)-i) + " more")
			break
		}
		if i == 0 {
			b.WriteString(", its aliases ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(clip.String(a, clip.QuoteMax))
	}
	return &modelError{msg: b.String(), upstream: upstream}
}
