package responses

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/chatjson"
	"github.com/nirmata/llm-gateway/internal/clip"
	"github.com/nirmata/llm-gateway/internal/fault"
	"github.com/nirmata/llm-gateway/internal/respstore"
	"github.com/nirmata/llm-gateway/internal/seal"
)

// state is what decoding a call needs besides its body: the caller's key, the store of
// its responses (previous_response_id, item_reference) and the sealer of reasoning
// (encrypted_content). A nil state stores nothing and seals nothing.
type state struct {
	ctx    context.Context
	keyID  string
	store  *respstore.Store
	sealer *seal.Sealer
	// foundation is the foundation model a request naming a model goes to.
	foundation func(model string) string
}

// load is the caller's stored response id; a 404 naming param when there is none for the
// key, a 503 when the store did not answer.
func (st *state) load(id, param string) (*respstore.Record, error) {
	if st == nil || st.store == nil {
		return nil, responseNotFound(param, id)
	}
	rec, err := st.store.Load(st.ctx, st.keyID, id)
	switch {
	case errors.Is(err, respstore.ErrNotFound):
		return nil, responseNotFound(param, id)
	case err != nil:
		return nil, &unavailableError{}
	}
	return rec, nil
}

// responseNotFound names the id the caller asked for. Unknown, expired, deleted and
// another key's are one answer: telling another key's apart would confirm to one key that
// an id exists for another.
func responseNotFound(param, id string) error {
	what := "response " + clip.Quote(id)
	if param != "" {
		what = param + " " + clip.Quote(id)
	}
	return notFound(param, "%s: no response of that id is stored for this API key: it is unknown, expired (responses_ttl), deleted, or was created with another key", what)
}

// unavailableError: the store of responses did not answer; a retry may.
type unavailableError struct{}

func (e *unavailableError) Error() string {
	return "the store of responses did not answer; retry shortly"
}

// Failure implements [fault.Classified].
func (e *unavailableError) Failure() fault.Failure {
	return fault.Failure{Kind: fault.KindUnavailable, Message: e.Error(), RetryAfter: fault.RetrySoon}
}

// open is the reasoning blocks sealed in an item's encrypted_content, for a request going
// to model. A value this gateway did not seal for this key is refused, naming the item;
// blocks of another foundation model are left out (nil), as Bedrock refuses them there
// (docs/BEDROCK.md G9) and a client may change models mid-conversation.
func (st *state) open(path, value, model string) ([]chat.ReasoningBlock, error) {
	if st == nil || st.sealer == nil {
		return nil, invalid("%s.encrypted_content was not sealed by this gateway; send the reasoning item without it", path)
	}
	from, blocks, err := st.sealer.Open(st.keyID, value)
	if err != nil {
		return nil, invalid("%s.encrypted_content %s; send the reasoning item without it", path, err)
	}
	if st.foundation != nil && from != st.foundation(model) {
		return nil, nil
	}
	return blocks, nil
}

// seal seals blocks that came from the Bedrock model id model for the caller.
func (st *state) seal(model string, blocks []chat.ReasoningBlock) string {
	if st == nil || st.sealer == nil || len(blocks) == 0 {
		return ""
	}
	return st.sealer.Seal(st.keyID, st.foundation(model), blocks)
}

// priorItems are the items of the conversation a stored response continues: its input,
// then its output, reasoning sealed.
func priorItems(rec *respstore.Record) (jsontext.Value, []*item, error) {
	raw := joinArrays(rec.Input, rec.Output)
	var items []*item
	if err := json.Unmarshal(raw, &items, chatjson.Lenient); err != nil {
		return nil, nil, &unavailableError{} // written by the gateway: a store that changed it
	}
	return raw, items, nil
}

// reference resolves an item_reference: an output item of one of the caller's stored
// responses, whose id ("fc_<request id>_<index>") names the response and the index.
func (st *state) reference(path, id string) (*item, jsontext.Value, error) {
	missing := notFound(path, "%s: item_reference %s names no output item of a response stored for this API key; send the item itself", path, clip.Quote(id))
	prefix, rest, ok := strings.Cut(id, "_")
	at := strings.LastIndexByte(rest, '_')
	if !ok || at < 0 || prefix == "" {
		return nil, nil, missing
	}
	index, err := strconv.Atoi(rest[at+1:])
	if err != nil || index < 0 {
		return nil, nil, missing
	}
	rec, err := st.load("resp_"+rest[:at], path)
	if err != nil {
		var nf *notFoundError
		if errors.As(err, &nf) {
			return nil, nil, missing
		}
		return nil, nil, err
	}
	var output []jsontext.Value
	if err := json.Unmarshal(rec.Output, &output); err != nil || index >= len(output) {
		return nil, nil, missing
	}
	var it item
	if err := json.Unmarshal(output[index], &it, chatjson.Lenient); err != nil {
		return nil, nil, &unavailableError{}
	}
	return &it, output[index], nil
}

// joinArrays is the JSON arrays' elements in one array.
func joinArrays(arrays ...jsontext.Value) jsontext.Value {
	out := []byte{'['}
	for _, a := range arrays {
		inner := bytes.TrimSpace(a)
		if len(inner) < 2 {
			continue
		}
		inner = bytes.TrimSpace(inner[1 : len(inner)-1])
		if len(inner) == 0 {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, inner...)
	}
	return append(out, ']')
}

// save stores r, the response to a call with store on, unless its key or its size keep it
// out; then r.Store is false and notStored says why (x-gateway-not-stored). body is r as
// stored, the answer to a unary call, or nil when it was not stored.
func (c *call) save(r *response) (body []byte, notStored string) {
	if c.st == nil || c.st.store == nil {
		r.Store = false
		return nil, respstore.NotStoredUnavailable
	}
	body = chatjson.Append(nil, r)
	rec := &respstore.Record{Owner: c.st.keyID, Response: body, Input: c.conversation, Output: storedOutput(r.Output)}
	if notStored = c.st.store.Save(c.st.ctx, r.ID, rec); notStored != "" {
		r.Store = false
		return nil, notStored
	}
	return body, ""
}

// storedOutput is a response's output items as a stored conversation holds them: its
// reasoning sealed whatever include asked for.
func storedOutput(items []any) jsontext.Value {
	out := make([]any, len(items))
	for i, it := range items {
		if r, ok := it.(*reasoningItem); ok && r.sealed != r.EncryptedContent {
			copied := *r
			copied.EncryptedContent = r.sealed
			it = &copied
		}
		out[i] = it
	}
	b, _ := json.Marshal(out) // the surface's own items
	return b
}

// page is a page of input_items: OpenAI's limit, order and after.
type page struct {
	limit int
	asc   bool
	after string
}

// pageOf reads the query parameters of input_items.
func pageOf(limit, order, after string) (page, error) {
	p := page{limit: 20, after: after}
	if limit != "" {
		n, err := strconv.Atoi(limit)
		if err != nil || n < 1 || n > 100 {
			return page{}, invalid("limit %s is not a whole number from 1 to 100", clip.Quote(limit))
		}
		p.limit = n
	}
	switch order {
	case "", "desc":
	case "asc":
		p.asc = true
	default:
		return page{}, invalid(`order %s is not one of "asc", "desc"`, clip.Quote(order))
	}
	return p, nil
}

// itemList is input_items' answer.
type itemList struct {
	Object  string           `json:"object"`
	Data    []jsontext.Value `json:"data"`
	FirstID *string          `json:"first_id"`
	LastID  *string          `json:"last_id"`
	HasMore bool             `json:"has_more"`
}

// list is the page of items, each with an id: the client's, or one made of the
// response's id and the item's place for an item that has none.
func (p page) list(items jsontext.Value, responseID string) []byte {
	var all []jsontext.Value
	_ = json.Unmarshal(items, &all) // written by the gateway
	ids := make([]string, len(all))
	for i, it := range all {
		var head struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(it, &head, chatjson.Lenient)
		if ids[i] = head.ID; ids[i] == "" {
			ids[i] = "item_" + strings.TrimPrefix(responseID, "resp_") + "_" + strconv.Itoa(i)
			all[i] = withID(it, ids[i])
		}
	}
	if !p.asc {
		slices.Reverse(all)
		slices.Reverse(ids)
	}
	start := 0
	if p.after != "" {
		if at := slices.Index(ids, p.after); at >= 0 {
			start = at + 1
		} else {
			start = len(all)
		}
	}
	end := min(start+p.limit, len(all))
	out := itemList{Object: "list", Data: all[start:end], HasMore: end < len(all)}
	if end > start {
		out.FirstID, out.LastID = &ids[start], &ids[end-1]
	}
	if out.Data == nil {
		out.Data = []jsontext.Value{}
	}
	return chatjson.Append(nil, &out)
}

// withID is the object item with "id" first.
func withID(item jsontext.Value, id string) jsontext.Value {
	rest := bytes.TrimSpace(item)
	if len(rest) < 2 || rest[0] != '{' {
		return item
	}
	rest = bytes.TrimSpace(rest[1:])
	out, _ := json.Marshal(id)
	out = append([]byte(`{"id":`), out...)
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
