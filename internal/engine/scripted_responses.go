package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// The OpenAI Responses protocol (streaming), as the Codex CLI speaks it:
// the conversation is a list of input items — messages, the model's own
// earlier function_call items and the client's function_call_output items
// — sent whole on every request (Codex sets store=false), and the answer
// is a stream of typed events ending in response.completed with usage.

// responseItem is the part of an input item the script reads.
type responseItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// modelItem says whether an input item is one the model produced: a turn
// of the model is a run of them, ended by what the client sends back.
func (it responseItem) modelItem() bool {
	switch it.Type {
	case "function_call", "reasoning", "custom_tool_call", "local_shell_call":
		return true
	case "message":
		return it.Role == "assistant"
	}
	return false
}

// responsesStep reads a Responses request: the persona tagged in its first
// user message that has one, and the turn — the count of runs of model
// items in the input.
func (s *Scripted) responsesStep(w http.ResponseWriter, r *http.Request) (n, size int, step Step, ok bool) {
	s.mu.Lock()
	s.requests++
	n = s.requests
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+s.Key {
		http.Error(w, `{"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"invalid key"}}`, http.StatusUnauthorized)
		return n, 0, step, false
	}
	var req struct {
		Model string         `json:"model"`
		Input []responseItem `json:"input"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err := json.Unmarshal(body, &req); err != nil || len(req.Input) == 0 {
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return n, 0, step, false
	}
	persona, turn, inModel := "", 0, false
	for _, it := range req.Input {
		if it.Type == "message" && it.Role == "user" && persona == "" {
			if p := personaRE().FindSubmatch(it.Content); p != nil {
				persona = string(p[1])
			}
		}
		m := it.modelItem()
		if m && !inModel {
			turn++
		}
		inModel = m
	}
	return n, len(body), s.step(persona, req.Model, turn), true
}

// responses serves POST /v1/responses, playing the scripts: a step's text
// is one assistant message, each tool call one function_call item whose
// arguments are the call's input as JSON.
func (s *Scripted) responses(w http.ResponseWriter, r *http.Request) {
	n, size, step, ok := s.responsesStep(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	seq := 0
	send := func(kind string, data map[string]any) {
		data["type"] = kind
		data["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b)
		if fl != nil {
			fl.Flush()
		}
	}
	id := fmt.Sprintf("resp_scripted_%d", n)
	head := func(status string, output []any) map[string]any {
		return map[string]any{"id": id, "object": "response", "created_at": 1, "status": status, "model": "scripted", "output": output}
	}
	send("response.created", map[string]any{"response": head("in_progress", []any{})})
	var output []any
	if step.Text != "" {
		mid := fmt.Sprintf("msg_scripted_%d", n)
		idx := len(output)
		send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
			"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []any{}}})
		for _, c := range chunks(step.Text, 24) {
			send("response.output_text.delta", map[string]any{"item_id": mid, "output_index": idx, "content_index": 0, "delta": c})
		}
		item := map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": step.Text, "annotations": []any{}}}}
		send("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
	}
	for i, tc := range step.Tools {
		args, _ := json.Marshal(tc.Input)
		fid, call := fmt.Sprintf("fc_scripted_%d_%d", n, i), fmt.Sprintf("call_scripted_%d_%d", n, i)
		idx := len(output)
		send("response.output_item.added", map[string]any{"output_index": idx, "item": map[string]any{
			"type": "function_call", "id": fid, "call_id": call, "name": tc.Name, "arguments": "", "status": "in_progress"}})
		for _, c := range chunks(string(args), 16) {
			send("response.function_call_arguments.delta", map[string]any{"item_id": fid, "output_index": idx, "delta": c})
		}
		item := map[string]any{"type": "function_call", "id": fid, "call_id": call, "name": tc.Name, "arguments": string(args), "status": "completed"}
		send("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		output = append(output, item)
	}
	done := head("completed", output)
	in, out := size/4, 10+len(step.Text)/4
	done["usage"] = map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	send("response.completed", map[string]any{"response": done})
}
