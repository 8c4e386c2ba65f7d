package bedrock

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"

	"github.com/nirmata/llm-gateway/internal/jsonenc"
)

// AppendConverseRequest appends req as Converse's JSON body. It writes the bytes
// encoding/json writes for these structs (without HTML escaping), without reflection and
// without re-validating the raw JSON fields: those must hold compact, valid JSON, as the
// translator writes them. A test holds the two encoders equal.
func AppendConverseRequest(dst []byte, req *ConverseRequest) ([]byte, error) {
	dst = append(dst, `{"messages":`...)
	dst = appendArray(dst, req.Messages, appendMessage)
	if len(req.System) > 0 {
		dst = append(dst, `,"system":`...)
		dst = appendArray(dst, req.System, appendSystemBlock)
	}
	if ic := req.InferenceConfig; ic != nil {
		var err error
		if dst, err = appendInference(dst, ic); err != nil {
			return nil, err
		}
	}
	if tc := req.ToolConfig; tc != nil {
		dst = appendToolConfig(dst, tc)
	}
	if len(req.AdditionalModelRequestFields) > 0 {
		dst = append(dst, `,"additionalModelRequestFields":`...)
		dst = append(dst, req.AdditionalModelRequestFields...)
	}
	return append(dst, '}'), nil
}

// appendArray writes items as encoding/json writes a slice: null when nil, else each
// item written by each, between brackets and commas.
func appendArray[T any](dst []byte, items []T, each func([]byte, *T) []byte) []byte {
	if items == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = each(dst, &items[i])
	}
	return append(dst, ']')
}

func appendMessage(dst []byte, m *Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = jsonenc.AppendString(dst, m.Role)
	dst = append(dst, `,"content":`...)
	dst = appendArray(dst, m.Content, appendContentBlock)
	return append(dst, '}')
}

func appendSystemBlock(dst []byte, s *SystemBlock) []byte {
	dst = append(dst, '{')
	sep := false
	if s.Text != "" {
		dst = appendKey(dst, &sep, "text")
		dst = jsonenc.AppendString(dst, s.Text)
	}
	if s.CachePoint != nil {
		dst = appendKey(dst, &sep, "cachePoint")
		dst = appendCachePoint(dst, s.CachePoint)
	}
	return append(dst, '}')
}

// appendKey writes a member's key, after a comma unless it is the object's first.
func appendKey(dst []byte, sep *bool, key string) []byte {
	if *sep {
		dst = append(dst, ',')
	}
	*sep = true
	dst = append(dst, '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

// appendRaw writes raw JSON as encoding/json writes a json.RawMessage: null when empty.
func appendRaw(dst, raw []byte) []byte {
	if len(raw) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}

func appendContentBlock(dst []byte, b *ContentBlock) []byte {
	dst = append(dst, '{')
	sep := false
	if b.Text != nil {
		dst = appendKey(dst, &sep, "text")
		dst = jsonenc.AppendString(dst, *b.Text)
	}
	if b.Image != nil {
		dst = appendKey(dst, &sep, "image")
		dst = appendImage(dst, b.Image)
	}
	if u := b.ToolUse; u != nil {
		dst = appendKey(dst, &sep, "toolUse")
		dst = append(dst, `{"toolUseId":`...)
		dst = jsonenc.AppendString(dst, u.ToolUseID)
		dst = append(dst, `,"name":`...)
		dst = jsonenc.AppendString(dst, u.Name)
		dst = append(dst, `,"input":`...)
		dst = appendRaw(dst, u.Input)
		dst = append(dst, '}')
	}
	if r := b.ToolResult; r != nil {
		dst = appendKey(dst, &sep, "toolResult")
		dst = appendToolResult(dst, r)
	}
	if b.CachePoint != nil {
		dst = appendKey(dst, &sep, "cachePoint")
		dst = appendCachePoint(dst, b.CachePoint)
	}
	if len(b.ReasoningContent) > 0 {
		dst = appendKey(dst, &sep, "reasoningContent")
		dst = append(dst, b.ReasoningContent...)
	}
	return append(dst, '}')
}

func appendToolResult(dst []byte, r *ToolResultBlock) []byte {
	dst = append(dst, `{"toolUseId":`...)
	dst = jsonenc.AppendString(dst, r.ToolUseID)
	dst = append(dst, `,"content":`...)
	dst = appendArray(dst, r.Content, appendToolResultContent)
	if r.Status != "" {
		dst = append(dst, `,"status":`...)
		dst = jsonenc.AppendString(dst, r.Status)
	}
	return append(dst, '}')
}

func appendToolResultContent(dst []byte, c *ToolResultContentBlock) []byte {
	dst = append(dst, '{')
	sep := false
	if c.Text != nil {
		dst = appendKey(dst, &sep, "text")
		dst = jsonenc.AppendString(dst, *c.Text)
	}
	if len(c.JSON) > 0 {
		dst = appendKey(dst, &sep, "json")
		dst = append(dst, c.JSON...)
	}
	if c.Image != nil {
		dst = appendKey(dst, &sep, "image")
		dst = appendImage(dst, c.Image)
	}
	return append(dst, '}')
}

func appendImage(dst []byte, img *ImageBlock) []byte {
	dst = append(dst, `{"format":`...)
	dst = jsonenc.AppendString(dst, img.Format)
	dst = append(dst, `,"source":{"bytes":`...)
	if img.Source.Bytes == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, img.Source.Bytes)
		dst = append(dst, '"')
	}
	return append(dst, "}}"...)
}

func appendCachePoint(dst []byte, c *CachePoint) []byte {
	dst = append(dst, `{"type":`...)
	dst = jsonenc.AppendString(dst, c.Type)
	return append(dst, '}')
}

func appendInference(dst []byte, ic *InferenceConfig) ([]byte, error) {
	dst = append(dst, `,"inferenceConfig":{`...)
	sep := false
	if ic.MaxTokens != nil {
		dst = appendKey(dst, &sep, "maxTokens")
		dst = strconv.AppendInt(dst, int64(*ic.MaxTokens), 10)
	}
	for _, f := range []struct {
		key string
		v   *float64
	}{{"temperature", ic.Temperature}, {"topP", ic.TopP}} {
		if f.v == nil {
			continue
		}
		dst = appendKey(dst, &sep, f.key)
		var err error
		if dst, err = appendFloat(dst, *f.v); err != nil {
			return nil, err
		}
	}
	if len(ic.StopSequences) > 0 {
		dst = appendKey(dst, &sep, "stopSequences")
		dst = append(dst, '[')
		for i, s := range ic.StopSequences {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonenc.AppendString(dst, s)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// appendFloat writes f as encoding/json does: shortest representation, exponent form
// only for very small or very large magnitudes, and no NaN or infinity.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, errors.New("bedrock: unsupported float value " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

func appendToolConfig(dst []byte, tc *ToolConfig) []byte {
	dst = append(dst, `,"toolConfig":{"tools":`...)
	dst = appendArray(dst, tc.Tools, appendTool)
	if c := tc.ToolChoice; c != nil {
		dst = append(dst, `,"toolChoice":{`...)
		sep := false
		if c.Auto != nil {
			dst = appendKey(dst, &sep, "auto")
			dst = append(dst, "{}"...)
		}
		if c.Any != nil {
			dst = appendKey(dst, &sep, "any")
			dst = append(dst, "{}"...)
		}
		if c.Tool != nil {
			dst = appendKey(dst, &sep, "tool")
			dst = append(dst, `{"name":`...)
			dst = jsonenc.AppendString(dst, c.Tool.Name)
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendTool(dst []byte, t *Tool) []byte {
	dst = append(dst, '{')
	sep := false
	if s := t.ToolSpec; s != nil {
		dst = appendKey(dst, &sep, "toolSpec")
		dst = append(dst, `{"name":`...)
		dst = jsonenc.AppendString(dst, s.Name)
		if s.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = jsonenc.AppendString(dst, s.Description)
		}
		dst = append(dst, `,"inputSchema":{"json":`...)
		dst = appendRaw(dst, s.InputSchema.JSON)
		dst = append(dst, "}}"...)
	}
	if t.CachePoint != nil {
		dst = appendKey(dst, &sep, "cachePoint")
		dst = appendCachePoint(dst, t.CachePoint)
	}
	return append(dst, '}')
}
