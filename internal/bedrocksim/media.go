package bedrocksim

import (
	"bytes"
	"fmt"
)

// Images and documents (docs/BEDROCK.md K). Formats are checked with the other member
// constraints (checkConstraints); the rest is here.

var (
	imageFormats    = []string{"png", "jpeg", "gif", "webp"}
	documentFormats = []string{"pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"}
)

// Limits per request (K1).
const (
	maxImages    = 20
	maxDocuments = 5
)

// Bedrock's texts for K's rules. The first two are quoted in docs/BEDROCK.md K; the others
// are Bedrock's answers as other projects' issue threads report them.
const (
	msgDocumentNeedsText = "A text block must be included when using documents."
	msgImageMismatch     = "The model returned the following errors: The provided image does not match the specified image format."
	msgImageUnreadable   = "Failed to sanitize image: Invalid or unsupported image format"
	msgDocumentName      = "The document file name can only contain alphanumeric characters, whitespace characters, hyphens, parentheses, and square brackets. The name can't contain more than one consecutive whitespace character. Check that the file name conforms to these restrictions and retry your request."
	msgDuplicateNames    = "Messages can't contain duplicate document names."
	msgTooManyDocuments  = "You can't include more than 5 documents in a request."
	msgTooManyImages     = "The model returned the following errors: messages: too many images: image_count > 20"
)

// checkMedia enforces K's rules on images and documents: where they may stand, document
// names and the text beside them, the counts, and image bytes that match their format. The
// bytes come last: Bedrock's model, not its validator, finds them wrong.
func checkMedia(req *converseRequest) *apiError {
	names := map[string]bool{}
	var images []*imageBlock
	documents := 0
	for i, msg := range req.Messages {
		hasText, hasDocument := false, false
		for j, b := range msg.Content {
			at := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch {
			case b.Text != nil:
				hasText = true
			case b.Image != nil:
				if msg.Role != roleUser {
					return validation(at + ": image blocks can only be in user messages.")
				}
				if err := emptyImage(at+".image", b.Image); err != nil {
					return err
				}
				images = append(images, b.Image)
			case b.Document != nil:
				if msg.Role != roleUser {
					return validation(at + ": document blocks can only be in user messages.")
				}
				if !validDocumentName(b.Document.Name) {
					return validation(msgDocumentName)
				}
				if names[b.Document.Name] {
					return validation(msgDuplicateNames)
				}
				names[b.Document.Name] = true
				hasDocument = true
				documents++
			case b.ToolResult != nil:
				for k, rc := range b.ToolResult.Content {
					if rc.Image == nil {
						continue
					}
					if err := emptyImage(fmt.Sprintf("%s.toolResult.content.%d.image", at, k), rc.Image); err != nil {
						return err
					}
					images = append(images, rc.Image)
				}
			}
		}
		if hasDocument && !hasText {
			return validation(msgDocumentNeedsText)
		}
	}
	switch {
	case documents > maxDocuments:
		return validation(msgTooManyDocuments)
	case len(images) > maxImages:
		return validation(msgTooManyImages)
	}
	for _, img := range images {
		switch sniffed := imageFormat(img.Source.Bytes); {
		case sniffed == "":
			return validation(msgImageUnreadable)
		case sniffed != img.Format:
			return validation(msgImageMismatch)
		}
	}
	return nil
}

// emptyImage refuses an image without bytes, with a text of the simulator's own.
func emptyImage(at string, img *imageBlock) *apiError {
	if len(img.Source.Bytes) > 0 {
		return nil
	}
	return validation("The image bytes at " + at + ".source are empty. Provide image bytes and try again.")
}

// validDocumentName: letters and digits (ASCII), hyphens, parentheses, square brackets and
// spaces, never two spaces in a row (K3). The length is a member constraint.
func validDocumentName(name string) bool {
	prevSpace := false
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9',
			r == '-', r == '(', r == ')', r == '[', r == ']':
			prevSpace = false
		case r == ' ' && !prevSpace:
			prevSpace = true
		default:
			return false
		}
	}
	return true
}

// imageFormat tells an image's format from its magic bytes (K2); "" for none of the four.
func imageFormat(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG")):
		return "png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "jpeg"
	case bytes.HasPrefix(b, []byte("GIF8")):
		return "gif"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	}
	return ""
}
