package engine

import (
	"encoding/json"
	"fmt"
	"strings"
)

// codexConfig is the whole config.toml of a fork's codex: the only
// configuration it loads, since CODEX_HOME is a fresh folder and the
// user's ~/.codex is not in the sandbox's view.
//
// What each part is for:
//   - the model provider is the fork's route to forkbomb's model proxy,
//     on the Responses API, its key the placeholder in OPENAI_API_KEY; no
//     retries of its own (the proxy and the race bound the work);
//   - approvals never, codex's sandbox off: ours confines it, and its own
//     cannot nest in ours;
//   - no update check, analytics, feedback, history, telemetry export,
//     web search, memories or sub-agents: nothing leaves but model calls,
//     and nothing outlives the fork;
//   - the fork's tree is an untrusted project: codex 0.169 loads a
//     project's .codex/config.toml (MCP servers, hooks, notify) only for a
//     trusted one (TestCodexRepoConfigIsolation proves both ways), and
//     saying so here keeps a later default from changing that.
func codexConfig(model, baseURL, workdir string) string {
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s = %s\n", k, tomlValue(v)) }
	if model != "" {
		kv("model", model)
	}
	kv("model_provider", "forkbomb")
	kv("approval_policy", "never")
	kv("sandbox_mode", "danger-full-access")
	kv("check_for_update_on_startup", false)
	kv("web_search", "disabled")
	b.WriteString("\n[analytics]\n")
	kv("enabled", false)
	b.WriteString("\n[feedback]\n")
	kv("enabled", false)
	b.WriteString("\n[history]\n")
	kv("persistence", "none")
	b.WriteString("\n[otel]\n")
	kv("exporter", "none")
	kv("log_user_prompt", false)
	b.WriteString("\n[features]\n")
	kv("memories", false)
	b.WriteString("\n[agents]\n")
	kv("enabled", false)
	b.WriteString("\n[model_providers.forkbomb]\n")
	kv("name", "forkbomb")
	kv("base_url", baseURL)
	kv("env_key", "OPENAI_API_KEY")
	kv("wire_api", "responses")
	kv("request_max_retries", 0)
	kv("stream_max_retries", 0)
	fmt.Fprintf(&b, "\n[projects.%s]\n", tomlValue(workdir))
	kv("trust_level", "untrusted")
	return b.String()
}

// tomlValue writes a string as a TOML basic string (JSON's escapes are
// TOML's), and a bool or an int as itself.
func tomlValue(v any) string {
	if s, ok := v.(string); ok {
		q, _ := json.Marshal(s)
		return string(q)
	}
	return fmt.Sprint(v)
}
