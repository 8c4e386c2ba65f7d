package translate

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nirmata/llm-gateway/internal/capabilities"
	"github.com/nirmata/llm-gateway/internal/chat"
	"github.com/nirmata/llm-gateway/internal/fault"
)

// webp1x1 is a real 1×1 lossless WebP file.
const webp1x1 = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="

// encoded returns an image of w×h pixels in format, written by the standard library.
func encoded(t *testing.T, format string, w, h int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	var buf bytes.Buffer
	switch format {
	case "png":
		require.NoError(t, png.Encode(&buf, img))
	case "jpeg":
		require.NoError(t, jpeg.Encode(&buf, img, nil))
	case "gif":
		require.NoError(t, gif.Encode(&buf, img, nil))
	}
	return buf.Bytes()
}

// webpHeader is the first 30 bytes of a WebP file whose first chunk is kind, with the
// chunk's first 10 data bytes.
func webpHeader(kind string, data ...byte) []byte {
	b := append([]byte("RIFF\x00\x00\x00\x00WEBP"+kind+"\x00\x00\x00\x00"), data...)
	return append(b, make([]byte, 30-len(b))...)
}

// TestImageFormatAndSize: the format comes from the magic bytes, the size from the header.
func TestImageFormatAndSize(t *testing.T) {
	t.Parallel()
	webp, err := base64.StdEncoding.DecodeString(webp1x1)
	require.NoError(t, err)
	tests := []struct {
		name   string
		data   []byte
		format string
		w, h   int
		ok     bool
	}{
		{"png", encoded(t, "png", 8001, 3), "png", 8001, 3, true},
		{"jpeg", encoded(t, "jpeg", 2, 8001), "jpeg", 2, 8001, true},
		{"gif", encoded(t, "gif", 7, 5), "gif", 7, 5, true},
		{"webp lossless", webp, "webp", 1, 1, true},
		// VP8: frame tag, start code 9d 01 2a, 14-bit sizes (the top 2 bits are scaling).
		{"webp lossy", webpHeader("VP8 ", 0, 0, 0, 0x9d, 0x01, 0x2a, 0x40, 0xdf, 0x10, 0x00), "webp", 8000, 16, true},
		// VP8L: signature 2f, then width-1 and height-1 in 14 bits each.
		{"webp lossless 9000 wide", webpHeader("VP8L", 0x2f, 0x27, 0x23, 0x00, 0x00), "webp", 9000, 1, true},
		// VP8X: flags and 3 reserved bytes, then width-1 and height-1 in 24 bits each.
		{"webp extended", webpHeader("VP8X", 0, 0, 0, 0, 0x3f, 0x1f, 0x00, 0x28, 0x23, 0x00), "webp", 8000, 9001, true},
		{"webp unknown chunk", webpHeader("ALPH"), "webp", 0, 0, false},
		{"png header cut", []byte("\x89PNG\r\n"), "png", 0, 0, false},
		{"bmp", []byte("BM\x3a\x00\x00\x00"), "", 0, 0, false},
		{"base64 text of a png", []byte("iVBORw0KGgo="), "", 0, 0, false},
		{"empty", nil, "", 0, 0, false},
	}
	for _, tt := range tests {
		format := imageFormat(tt.data)
		assert.Equal(t, tt.format, format, tt.name)
		if format == "" {
			continue
		}
		w, h, ok := imageSize(format, tt.data)
		assert.Equal(t, tt.ok, ok, tt.name)
		assert.Equal(t, [2]int{tt.w, tt.h}, [2]int{w, h}, tt.name)
	}
}

func dataURL(mediaType string, data []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// TestMediaLimits: sizes and dimensions beyond Bedrock's are refused before Bedrock is
// called, naming the part's field that holds the bytes; at the limit they pass.
func TestMediaLimits(t *testing.T) {
	t.Parallel()
	bigPNG := append([]byte("\x89PNG"), make([]byte, maxImageBytes-3)...)
	bigPDF := append([]byte("%PDF-1.4\n"), make([]byte, maxDocumentBytes-8)...)
	tests := []struct {
		name string
		part chat.Part
		err  string
	}{
		{"image at the size limit", chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: dataURL("image/png", bigPNG[:maxImageBytes])}}, ""},
		{"image over the size limit", chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: dataURL("image/png", bigPNG)}},
			"invalid request: messages[0].content[1].image_url.url: the image is 3932161 bytes; Bedrock takes at most 3932160 (3.75 MB)"},
		{"image 8000 pixels wide", chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: dataURL("image/png", encoded(t, "png", 8000, 1))}}, ""},
		{"image 8001 pixels wide", chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: dataURL("image/jpeg", encoded(t, "png", 8001, 1))}},
			"invalid request: messages[0].content[1].image_url.url: the image is 8001x1 pixels; Bedrock takes at most 8000x8000"},
		{"webp 9001 pixels high", chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: dataURL("image/webp", webpHeader("VP8X", 0, 0, 0, 0, 0, 0, 0, 0x28, 0x23, 0x00))}},
			"invalid request: messages[0].content[1].image_url.url: the image is 1x9001 pixels; Bedrock takes at most 8000x8000"},
		{"document at the size limit", chat.Part{Type: chat.PartFile, File: &chat.File{Data: dataURL("application/pdf", bigPDF[:maxDocumentBytes])}}, ""},
		{"document over the size limit", chat.Part{Type: chat.PartFile, File: &chat.File{Data: dataURL("application/pdf", bigPDF)}},
			"invalid request: messages[0].content[1].file.file_data: the document is 4718593 bytes; Bedrock takes at most 4718592 (4.5 MB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Parts: []chat.Part{{Type: chat.PartText, Text: "see"}, tt.part}}}}
			_, _, err := Request(req, capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0"))
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, fault.ErrInvalidRequest)
			assert.EqualError(t, err, tt.err)
			var re *fault.RequestError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, strings.Fields(strings.TrimPrefix(tt.err, "invalid request: "))[0], re.Param+":")
		})
	}
}

// TestUnsupportedValue: what the gateway does not do is marked, besides being an invalid
// request; other invalid parts are not.
func TestUnsupportedValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		part        chat.Part
		unsupported bool
	}{
		{chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: "https://example.com/cat.png"}}, true},
		{chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: "data:image/bmp;base64,Qk06AAAA"}}, true},
		{chat.Part{Type: chat.PartFile, File: &chat.File{FileID: "file-1"}}, true},
		{chat.Part{Type: chat.PartFile, File: &chat.File{Data: "data:application/zip;base64,UEsDBA=="}}, true},
		{chat.Part{Type: chat.PartFile, File: &chat.File{Data: "UEsDBA==", Filename: "a.zip"}}, true},
		{chat.Part{Type: "input_audio"}, true},
		{chat.Part{Type: chat.PartImageURL}, false},
		{chat.Part{Type: chat.PartImageURL, Image: &chat.ImageURL{URL: "data:image/png;base64,%%%"}}, false},
		{chat.Part{Type: chat.PartFile, File: &chat.File{Data: "JVBERi0="}}, false},
	}
	for _, tt := range tests {
		req := &chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Parts: []chat.Part{tt.part}}}}
		_, _, err := Request(req, capabilities.Lookup("us.anthropic.claude-sonnet-4-20250514-v1:0"))
		require.ErrorIs(t, err, fault.ErrInvalidRequest, "%+v", tt.part)
		var re *fault.RequestError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, tt.unsupported, re.Reason == fault.ReasonUnsupportedValue, err.Error())
		assert.True(t, strings.HasPrefix(re.Param, "messages[0].content[0]"), re.Param)
	}
}

// TestDocumentNames: filenames become names Bedrock takes; repeats are numbered.
func TestDocumentNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"report.pdf":                     "report pdf",
		"  John's report #3 (final).pdf": "John s report 3 (final) pdf",
		"a\t\tb__c [x]-y":                "a b c [x]-y",
		"résumé.docx":                    "r sum docx",
		"日本語":                            "",
		"...":                            "",
		strings.Repeat("ab ", 100):       strings.TrimSpace(strings.Repeat("ab ", 67)[:200]),
	} {
		assert.Equal(t, want, cleanName(in), "%q", in)
	}

	var md media
	long := strings.Repeat("x", 250) + ".pdf"
	for _, want := range []string{"a pdf", "a pdf (2)", "a pdf (3)"} {
		assert.Equal(t, want, md.documentName("a.pdf", nil))
	}
	assert.Equal(t, "a pdf (2) (2)", md.documentName("a pdf (2)", nil), "a name handed out is never handed out again")
	assert.Equal(t, strings.Repeat("x", 200), md.documentName(long, nil))
	second := md.documentName(long, nil)
	assert.Equal(t, strings.Repeat("x", 196)+" (2)", second)
	assert.Len(t, second, maxDocumentName)
	assert.Equal(t, "document-e3b0c442", md.documentName("", []byte{}), "SHA-256 of nothing")
	assert.Equal(t, "document-e3b0c442 (2)", md.documentName("%%%", []byte{}))
}
