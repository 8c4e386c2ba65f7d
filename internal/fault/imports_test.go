package fault

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// importsOf is what the non-test Go files of the package in dir (relative to internal/)
// import, each path with the files that import it.
func importsOf(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, dir)
	out := map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			out[path] = append(out[path], filepath.Base(name))
		}
	}
	return out
}

const module = "github.com/nirmata/llm-gateway/"

// TestLayering holds the layering docs/SURFACES.md describes: the core, the policies it
// consumes and this package know no transport (net/http, gRPC) nor any surface, and this
// package no upstream; the core no longer reads Bedrock's exception codes through the
// SDK's error type (internal/bedrock does, once); and no surface imports the translator,
// which it needed only to refuse a request before this package owned refusals.
func TestLayering(t *testing.T) {
	t.Parallel()
	forbidden := func(pkg string, bad func(path string) bool) {
		for path, files := range importsOf(t, pkg) {
			assert.False(t, bad(path), "internal/%s imports %s (%s)", pkg, path, strings.Join(files, ", "))
		}
	}
	transport := func(path string) bool {
		return path == "net/http" || strings.HasPrefix(path, "net/http/") || strings.HasPrefix(path, "google.golang.org/grpc")
	}
	surfaces := []string{"nirmata", "openai", "anthropic", "responses", "grpcapi", "httpx", "server", "observe"}
	surface := func(path string) bool {
		for _, s := range surfaces {
			if path == module+"internal/"+s {
				return true
			}
		}
		return false
	}
	for _, engine := range []string{"core", "quota", "route", "reasoning", "toolguard"} {
		forbidden(engine, func(path string) bool {
			return transport(path) || surface(path) || strings.HasPrefix(path, "github.com/aws/smithy-go")
		})
	}
	forbidden("fault", func(path string) bool {
		return transport(path) || strings.HasPrefix(path, module) && path != module+"internal/clip"
	})
	for _, surface := range []string{"nirmata", "openai", "anthropic", "responses", "grpcapi", "httpx", "chatjson"} {
		forbidden(surface, func(path string) bool { return path == module+"internal/translate" })
	}
}
