package audit

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
)

// contentJSON writes and reads the chat model's byte fields, a tool's parameters and a
// response format's schema, which hold JSON text, as the JSON values they are.
var contentJSON = json.JoinOptions(
	json.WithMarshalers(json.MarshalToFunc(func(enc *jsontext.Encoder, b []byte) error {
		if !jsontext.Value(b).IsValid() {
			return enc.WriteToken(jsontext.String(string(b)))
		}
		return enc.WriteValue(jsontext.Value(b))
	})),
	json.WithUnmarshalers(json.UnmarshalFromFunc(func(dec *jsontext.Decoder, b *[]byte) error {
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		*b = bytes.Clone(v)
		return nil
	})),
)

// EncodeContent is v, a *chat.Request or a *chat.Response, in the chat model's JSON form;
// when that is longer than limit bytes, a Clipped in its place, and clipped is true.
func EncodeContent(v any, limit int) (value jsontext.Value, clipped bool, err error) {
	b, err := json.Marshal(v, contentJSON)
	if err != nil {
		return nil, false, err
	}
	if len(b) <= limit {
		return b, false, nil
	}
	prefix := b[:limit]
	for len(prefix) > 0 && prefix[len(prefix)-1]&0xc0 == 0x80 { // no cut rune
		prefix = prefix[:len(prefix)-1]
	}
	if len(prefix) > 0 && prefix[len(prefix)-1] >= 0xc0 {
		prefix = prefix[:len(prefix)-1]
	}
	b, err = json.Marshal(Clipped{Clipped: true, Bytes: len(b), Prefix: string(prefix)})
	return b, true, err
}

// ErrClipped is the error of DecodeRequest for a request kept clipped.
var ErrClipped = errors.New("the request was kept clipped (audit_max_content_bytes): it cannot be replayed")

// DecodeRequest reads a request EncodeContent wrote.
func DecodeRequest(v jsontext.Value) (*chat.Request, error) {
	if len(v) == 0 {
		return nil, errors.New("the call was recorded without its request (audit level metadata)")
	}
	var c Clipped
	if json.Unmarshal(v, &c) == nil && c.Clipped {
		return nil, ErrClipped
	}
	var req chat.Request
	if err := json.Unmarshal(v, &req, contentJSON); err != nil {
		return nil, fmt.Errorf("the recorded request: %w", err)
	}
	return &req, nil
}

// DecodeAnswer reads an answer EncodeContent wrote; nil when it was kept clipped or not
// at all.
func DecodeAnswer(v jsontext.Value) *chat.Response {
	var c Clipped
	if len(v) == 0 || json.Unmarshal(v, &c) != nil || c.Clipped {
		return nil
	}
	var resp chat.Response
	if json.Unmarshal(v, &resp, contentJSON) != nil {
		return nil
	}
	return &resp
}
