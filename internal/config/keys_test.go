package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shortKey is a key too short to keep, written so that any three characters of it in a
// message would be a quote of it.
const shortKey = "Zq9xW7vJ"

// longKey and digest are keys that pass: a plaintext key of 16 characters, the fewest
// allowed, and the SHA-256 of a key, whose length cannot be checked.
const longKey = "long-key-0123456"

var digest = "sha256:" + sha256Hex("any key at all")

const tooShort = "shorter than 16 characters, so it can be guessed; make a key with: openssl rand -hex 32"

// writeMode writes a file of the given mode, whatever the umask.
func writeMode(t *testing.T, name, text string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	require.NoError(t, os.Chmod(path, mode))
	return path
}

// requireNoQuote fails when msg holds any three characters in a row of key.
func requireNoQuote(t *testing.T, msg, key string) {
	t.Helper()
	for i := 0; i+3 <= len(key); i++ {
		require.NotContains(t, msg, key[i:i+3], "the message quotes the key")
	}
}

// TestShortKeysAreRefused: a plaintext key under 16 characters stops startup from every
// source, the error naming the setting and its source, the file's line or the keys entry,
// and quoting no part of the key; digests pass.
func TestShortKeysAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		yaml     string // a --config file
		keysFile string // an --api-keys-file
		want     string // FILE: the --config file
	}{
		{name: "flag", args: []string{"--api-keys", longKey + "," + shortKey}, want: "api_keys[1]: " + tooShort + " (from --api-keys)"},
		{name: "environment", env: map[string]string{"GATEWAY_API_KEYS": shortKey}, want: "api_keys[0]: " + tooShort + " (from GATEWAY_API_KEYS)"},
		{name: "YAML api_keys", yaml: "api_keys: [" + shortKey + "]", want: "api_keys[0]: " + tooShort + " (from FILE)"},
		{name: "keys file", keysFile: "# ci\n" + longKey + "\n\n" + shortKey + "\n", want: "api_keys_file line 4: " + tooShort + " (from --api-keys-file)"},
		{name: "YAML keys", yaml: "keys:\n  - {key: " + longKey + "}\n  - {key: '" + digest + "'}\n  - {name: ci, key: " + shortKey + "}\n", want: "keys[2].key: " + tooShort + " (from FILE)"},
		{name: "one character", args: []string{"--api-keys", "x"}, want: "api_keys[0]: " + tooShort + " (from --api-keys)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args, want := tt.args, tt.want
			if tt.yaml != "" {
				file := writeFile(t, tt.yaml)
				args = append(args, "--config", file)
				want = strings.ReplaceAll(want, "FILE", file)
			}
			if tt.keysFile != "" {
				args = append(args, "--api-keys-file", writeMode(t, "keys", tt.keysFile, 0o600))
			}
			_, err := Load(args, env(tt.env))
			require.EqualError(t, err, want)
			requireNoQuote(t, err.Error(), shortKey)
		})
	}

	// Digests cannot be checked, and 16 characters are enough, from every source.
	keys := writeMode(t, "keys", digest+"\n"+longKey+"\n", 0o600)
	file := writeFile(t, "api_keys: ['"+digest+"']\nkeys: [{key: "+longKey+"x}]\n")
	cfg, err := Load([]string{"--config", file, "--api-keys-file", keys}, env(map[string]string{"GATEWAY_API_KEYS": longKey + "y"}))
	require.NoError(t, err)
	assert.Equal(t, []string{longKey + "y"}, cfg.APIKeys)
	assert.Equal(t, []string{digest, longKey}, cfg.FileKeys)
	assert.Empty(t, cfg.Warnings)
}

// TestKeysFileLines: # starts a comment only at the start of a line (after spaces); any
// other line is one key, trimmed, and may hold #; a line with whitespace inside, such as a
// key followed by a note, stops startup naming its line, never quoting it. Every bad line
// is reported.
func TestKeysFileLines(t *testing.T) {
	t.Parallel()
	text := "# team A\n" +
		"   # an indented comment\n" +
		"first-key-0123456789\n" +
		"withcomment-0123 # prod key\n" +
		"\t second-key-0123456789 \r\n" + // trimmed, CRLF included
		"key#with-a-hash-0123\n" +
		"tab\tinside-0123456789\n" +
		digest + "\n"
	_, err := Load([]string{"--api-keys-file", writeMode(t, "keys", text, 0o600)}, env(nil))
	const inside = "whitespace inside a key; a line holds one key, and # starts a comment only at the start of a line (from --api-keys-file)"
	require.EqualError(t, err, "api_keys_file line 4: "+inside+"\napi_keys_file line 7: "+inside)
	for _, quoted := range []string{"withcomment", "prod", "tab", "0123"} {
		assert.NotContains(t, err.Error(), quoted)
	}

	// A Windows editor's byte-order mark does not start the first key.
	good := "\ufeff" + strings.ReplaceAll(strings.ReplaceAll(text, " # prod key", ""), "tab\t", "tab-")
	cfg, err := Load([]string{"--api-keys-file", writeMode(t, "keys", good, 0o600)}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"first-key-0123456789", "withcomment-0123", "second-key-0123456789", "key#with-a-hash-0123", "tab-inside-0123456789", digest}, cfg.FileKeys)

	empty := writeMode(t, "keys", "# nothing yet\n\n", 0o600)
	_, err = Load(nil, env(map[string]string{"GATEWAY_API_KEYS_FILE": empty}))
	assert.EqualError(t, err, "api_keys_file: "+empty+" holds no key (from GATEWAY_API_KEYS_FILE)")
	_, err = Load([]string{"--api-keys-file", "/nonexistent/keys"}, env(nil))
	assert.EqualError(t, err, "api_keys_file: open /nonexistent/keys: no such file or directory (from --api-keys-file)")
}

// TestKeysOnTheCommandLine: plaintext keys given with --api-keys are visible to every
// user of the host in ps: one warning, which names no key; the environment, the files and
// digests are not.
func TestKeysOnTheCommandLine(t *testing.T) {
	t.Parallel()
	const warning = "api_keys: keys given with --api-keys are visible to every user of this host (ps, /proc); give them in --api-keys-file or GATEWAY_API_KEYS"
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"flag", []string{"--api-keys", longKey + "a,", "--api-keys=" + longKey + "b"}, nil, []string{warning}},
		{"flag over the environment", []string{"--api-keys", longKey}, map[string]string{"GATEWAY_API_KEYS": longKey + "e"}, []string{warning}},
		{"environment", nil, map[string]string{"GATEWAY_API_KEYS": longKey}, nil},
		{"digests on the flag", []string{"--api-keys", digest}, nil, nil},
		{"flag emptying the environment's", []string{"--api-keys="}, map[string]string{"GATEWAY_API_KEYS": longKey}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(tt.args, env(tt.env))
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg.Warnings)
		})
	}
}

// TestKeyFilesExposure: a file holding plaintext keys that every user of the host may read
// (the keys file, or the YAML file with keys in api_keys or keys) is one warning; a keys
// file or YAML file every user may write stops startup, digests or not. Symlinks, as
// Kubernetes mounts Secrets, are judged by their target.
func TestKeyFilesExposure(t *testing.T) {
	t.Parallel()
	const readable = " holds keys in plaintext and is readable by every user of this host; chmod 600 or 640, or store sha256:<hex> of each key"
	const writable = " is writable by every user of this host, who could add a key; chmod 600 or 640"
	plainKeys, digests := longKey+"\n", "# hashed\n"+digest+"\n"
	tests := []struct {
		name     string
		keysFile string
		keysMode os.FileMode
		yaml     string
		yamlMode os.FileMode
		warning  string // KEYS: the keys file; FILE: the YAML file
		err      string
	}{
		{name: "plaintext keys file readable by all", keysFile: plainKeys, keysMode: 0o644, warning: "api_keys_file: KEYS" + readable},
		{name: "plaintext keys file readable by its group", keysFile: plainKeys, keysMode: 0o640},
		{name: "plaintext keys file readable by its owner", keysFile: plainKeys, keysMode: 0o400},
		{name: "digests readable by all", keysFile: digests, keysMode: 0o644},
		{name: "digests writable by all", keysFile: digests, keysMode: 0o666, err: "api_keys_file: KEYS" + writable + " (from --api-keys-file)"},
		{name: "keys file writable, not readable, by all", keysFile: plainKeys, keysMode: 0o602, err: "api_keys_file: KEYS" + writable + " (from --api-keys-file)"},
		{name: "YAML api_keys readable by all", yaml: "api_keys: [" + longKey + "]", yamlMode: 0o644, warning: "config: FILE" + readable},
		{name: "YAML keys readable by all", yaml: "keys: [{name: ci, key: " + longKey + "}]", yamlMode: 0o604, warning: "config: FILE" + readable},
		{name: "YAML digests readable by all", yaml: "api_keys: ['" + digest + "']\nkeys: [{key: '" + digest + "'}]", yamlMode: 0o644},
		{name: "YAML without keys readable by all", yaml: "max_tools: 8", yamlMode: 0o644},
		{name: "YAML without keys writable by all", yaml: "max_tools: 8", yamlMode: 0o666, err: "config: FILE" + writable + " (from --config)"},
		{name: "YAML api_keys readable by owner", yaml: "api_keys: [" + longKey + "]", yamlMode: 0o600},
		{name: "both readable by all", keysFile: plainKeys, keysMode: 0o644, yaml: "keys: [{key: " + longKey + "x}]", yamlMode: 0o644,
			warning: "config: FILE" + readable + "\napi_keys_file: KEYS" + readable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var args []string
			var keys, file string
			if tt.keysFile != "" {
				keys = writeMode(t, "keys", tt.keysFile, tt.keysMode)
				args = append(args, "--api-keys-file", keys)
			}
			if tt.yaml != "" {
				file = writeMode(t, "gateway.yaml", tt.yaml, tt.yamlMode)
				args = append(args, "--config", file)
			}
			paths := strings.NewReplacer("KEYS", keys, "FILE", file)
			cfg, err := Load(args, env(nil))
			if tt.err != "" {
				require.EqualError(t, err, paths.Replace(tt.err))
				return
			}
			require.NoError(t, err)
			var want []string
			if tt.warning != "" {
				want = strings.Split(paths.Replace(tt.warning), "\n")
			}
			assert.Equal(t, want, cfg.Warnings)
		})
	}

	// The file is judged, not what beats it: keys in a readable YAML file are exposed even
	// when the environment gives others.
	file := writeMode(t, "gateway.yaml", "api_keys: ["+longKey+"]", 0o644)
	cfg, err := Load([]string{"--config", file}, env(map[string]string{"GATEWAY_API_KEYS": longKey + "e"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"config: " + file + readable}, cfg.Warnings)
}

// TestKeysFileThroughSymlinks: Kubernetes mounts a Secret as name -> ..data/name, ..data ->
// a timestamped directory; the mode that counts is the target's (the links are 0777).
func TestKeysFileThroughSymlinks(t *testing.T) {
	t.Parallel()
	mount := func(t *testing.T, mode os.FileMode) string {
		dir := t.TempDir()
		stamp := filepath.Join(dir, "..2026_03_02_10_20_05.123456789")
		require.NoError(t, os.Mkdir(stamp, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(stamp, "keys"), []byte(longKey+"\n"), 0o600))
		require.NoError(t, os.Chmod(filepath.Join(stamp, "keys"), mode))
		require.NoError(t, os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data")))
		require.NoError(t, os.Symlink("..data/keys", filepath.Join(dir, "keys")))
		return filepath.Join(dir, "keys")
	}
	cfg, err := Load([]string{"--api-keys-file", mount(t, 0o440)}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{longKey}, cfg.FileKeys)
	assert.Empty(t, cfg.Warnings, "the chart's defaultMode 0440")

	keys := mount(t, 0o644)
	cfg, err = Load([]string{"--api-keys-file", keys}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"api_keys_file: " + keys + " holds keys in plaintext and is readable by every user of this host; chmod 600 or 640, or store sha256:<hex> of each key"}, cfg.Warnings)

	keys = mount(t, 0o666)
	_, err = Load([]string{"--api-keys-file", keys}, env(nil))
	assert.EqualError(t, err, "api_keys_file: "+keys+" is writable by every user of this host, who could add a key; chmod 600 or 640 (from --api-keys-file)")
}

// TestSealKeysOnTheCommandLine: reasoning seal keys given with --reasoning-seal-keys are
// visible in ps: one warning naming no key; the variable is not, and both are read.
func TestSealKeysOnTheCommandLine(t *testing.T) {
	t.Parallel()
	const k1, k2 = "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	cfg, err := Load([]string{"--reasoning-seal-keys", k1 + "," + k2}, env(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{k1, k2}, cfg.ReasoningSealKeys)
	assert.Equal(t, []string{"reasoning_seal_keys: keys given with --reasoning-seal-keys are visible to every user of this host (ps, /proc); give them in GATEWAY_REASONING_SEAL_KEYS or the configuration file"}, cfg.Warnings)
	cfg, err = Load(nil, env(map[string]string{"GATEWAY_REASONING_SEAL_KEYS": k2}))
	require.NoError(t, err)
	assert.Equal(t, []string{k2}, cfg.ReasoningSealKeys)
	assert.Empty(t, cfg.Warnings)
}
