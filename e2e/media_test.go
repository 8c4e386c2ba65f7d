package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mediaFixtures are a real 1×1 PNG and a minimal PDF, as data URLs.
func mediaFixtures(t *testing.T) (pngURL, pdfURL string) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 1, 1))))
	pdf := []byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n")
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()),
		"data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdf)
}

// An image and a document reach the simulator, which checks them with Bedrock's rules
// (docs/BEDROCK.md K: formats, bytes that match, document names, a text block beside
// documents), so a 200 proves the translation valid. What the gateway cannot send is a
// 400 naming the part.
func TestImagesAndDocumentsOnSim(t *testing.T) {
	t.Parallel()
	g := simGateway(t)
	pngURL, pdfURL := mediaFixtures(t)
	imagePart := func(url string) string {
		return `{"type":"image_url","image_url":{"url":` + quote(url) + `,"detail":"high"}}`
	}
	filePart := func(url, name string) string {
		return `{"type":"file","file":{"file_data":` + quote(url) + `,"filename":` + quote(name) + `}}`
	}
	body := func(parts ...string) string {
		b := `{"messages":[{"role":"user","content":[`
		for i, p := range parts {
			if i > 0 {
				b += ","
			}
			b += p
		}
		return b + `]}]}`
	}

	for _, tt := range []struct{ name, body, said string }{
		{"text, image and document", body(`{"type":"text","text":"What do these show?"}`, imagePart(pngURL), filePart(pdfURL, "Q3 report.pdf")), "What do these show?"},
		// Bedrock wants a text block beside documents: the gateway names them.
		{"documents alone", body(filePart(pdfURL, "Q3 report.pdf"), filePart(pdfURL, "Q3 report.pdf")), "Attached: Q3 report pdf, Q3 report pdf (2)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, raw := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, tt.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
			var r chatResponse
			require.NoError(t, json.Unmarshal(raw, &r))
			require.NotNil(t, r.Message)
			assert.Equal(t, "Hello from the Bedrock simulator. You said: "+tt.said, *r.Message)
		})
	}

	pdfAsImage := "data:image/png;base64," + pdfURL[len("data:application/pdf;base64,"):]
	for _, tt := range []struct{ name, body, field string }{
		{"PDF bytes sent as an image", body(`{"type":"text","text":"x"}`, imagePart(pdfAsImage)), "messages[0].content[1].image_url.url: the image format is not png, jpeg, gif or webp"},
		{"image sent as a document", body(`{"type":"text","text":"x"}`, filePart(pngURL, "cat.png")), `messages[0].content[1].file.file_data: document type "image/png" is not supported`},
		{"remote image", body(imagePart("https://example.com/cat.png")), "messages[0].content[0].image_url.url: remote image URLs are not fetched"},
		{"file id", body(`{"type":"file","file":{"file_id":"file-abc"}}`), "messages[0].content[0].file.file_id is not supported"},
		{"audio", body(`{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}`), `messages[0].content[0].type "input_audio" is not supported`},
		{"six documents", body(filePart(pdfURL, "a.pdf"), filePart(pdfURL, "b.pdf"), filePart(pdfURL, "c.pdf"), filePart(pdfURL, "d.pdf"), filePart(pdfURL, "e.pdf"), filePart(pdfURL, "f.pdf")),
			"messages[0].content[5]: more than 5 documents in the request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, raw := post(t, "http://"+g.HTTP+"/llm-apps/chat", "Bearer "+testKey, tt.body)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(raw))
			var e errorBody
			require.NoError(t, json.Unmarshal(raw, &e))
			assert.Contains(t, e.Error, tt.field)
			assert.Equal(t, "invalid_argument", e.Code)
		})
	}

	// Neither prompt text, nor file names, nor the bytes reach the log.
	for _, e := range g.logs.AllUntimed() {
		line := fmt.Sprint(e.Message, e.ContextMap())
		for _, secret := range []string{"What do these show?", "Q3 report", pngURL[len("data:image/png;base64,"):][:16], "JVBERi0"} {
			assert.NotContains(t, line, secret)
		}
	}
}
