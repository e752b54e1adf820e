package main

import (
	"github.com/gotpu/gotpu/internal/testreq"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// openAICache is where tools/openai/install.sh puts the pinned clients.
func openAICache() string {
	if d := os.Getenv("GOTPU_OPENAI_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "gotpu-openai")
}

// TestServeOpenAIClients runs the official OpenAI clients (Python and
// Node, pinned by tools/openai/install.sh) against gotpu serve started in
// process on a free port, serving the tiny Llama through the reference
// engine and a tiny embedding model, with an API key. Each client skips,
// with the reason logged, when the install script has not put it in the
// cache; the whole test skips under -short.
func TestServeOpenAIClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the OpenAI client tests start python and node")
	}
	cache := openAICache()
	py := filepath.Join(cache, "venv", "bin", "python")
	nodeDir := filepath.Join(cache, "node")
	clients := []struct {
		name   string
		argv   []string
		needs  []string
		script string
	}{
		{"python", []string{py}, []string{py}, "client_test.py"},
		{"node", []string{"node"}, []string{filepath.Join(nodeDir, "node_modules", "openai", "package.json")}, "client_test.mjs"},
	}
	dir := chatModelDir(t)
	widenPositions(t, dir, 256)
	embed := tinyEmbedModel(t)
	start, stop := startServe(t, "--model", dir, "--embed-model", embed, "--served-model-name", "tiny", "--api-key", "sk-test")
	defer stop()
	scripts, _ := filepath.Abs(filepath.Join("..", "..", "tools", "openai"))
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range c.needs {
				if _, err := os.Stat(n); err != nil {
					testreq.Missing(t, "%s is not installed (%v); run tools/openai/install.sh (honours GOTPU_OPENAI_CACHE)", c.name, err)
				}
			}
			if _, err := exec.LookPath(c.argv[0]); err != nil {
				testreq.Missing(t, "%s: %v", c.argv[0], err)
			}
			cmd := exec.Command(c.argv[0], filepath.Join(scripts, c.script))
			cmd.Env = append(os.Environ(), "GOTPU_URL="+start["url"].(string), "GOTPU_MODEL=tiny",
				"GOTPU_EMBED_MODEL="+filepath.Base(embed), "GOTPU_API_KEY=sk-test", "GOTPU_OPENAI_NODE="+nodeDir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s client: %v\n%s", c.name, err, out)
			}
			if !strings.HasPrefix(strings.TrimSpace(string(out)), "ok ") {
				t.Fatalf("%s client printed %q", c.name, out)
			}
			t.Logf("%s: %s", c.name, strings.TrimSpace(string(out)))
		})
	}
}
