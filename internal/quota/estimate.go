package quota

import "github.com/nirmata/llm-gateway/internal/chat"

// What admission reserves for the output of a request whose translation sends no
// maxTokens (default_max_tokens 0) on a model whose maximum output the gateway does not know.
const unknownOutputReservation = 4096

// Tokens an image is estimated at: the most Claude counts for one (about 1.15 megapixels,
// width × height / 750); the bytes of a base64 image say nothing of its tokens.
const imageTokens = 1600

// InputEstimate is the input tokens of a request by estimate, at 4 bytes a token: its
// messages (the system prompt among them), tools and response_format schema, each image
// at imageTokens.
func InputEstimate(req *chat.Request) int64 {
	var bytes, images int64
	for i := range req.Messages {
		m := &req.Messages[i]
		bytes += int64(len(m.Content) + len(m.ToolCallID) + len(m.Name))
		for _, p := range m.Parts {
			bytes += int64(len(p.Text))
			if p.Image != nil {
				images++
			}
			if p.File != nil {
				bytes += int64(len(p.File.Data))
			}
		}
		for _, c := range m.ToolCalls {
			bytes += int64(len(c.ID) + len(c.Name) + len(c.Arguments))
		}
		for _, r := range m.Reasoning {
			bytes += int64(len(r.Text))
		}
	}
	for _, t := range req.Tools {
		bytes += int64(len(t.Name) + len(t.Description) + len(t.Parameters))
	}
	if f := req.ResponseFormat; f != nil {
		bytes += int64(len(f.Description) + len(f.Schema))
	}
	return bytes/4 + images*imageTokens
}

// OutputEstimate is the output a request may use: maxTokens, the one its translation
// sends (its max_tokens, else default_max_tokens, with a thinking budget), else
// modelMaxOutput, the model's maximum output, else unknownOutputReservation.
func OutputEstimate(maxTokens *int32, modelMaxOutput int) int64 {
	switch {
	case maxTokens != nil:
		return int64(*maxTokens)
	case modelMaxOutput > 0:
		return int64(modelMaxOutput)
	}
	return unknownOutputReservation
}
