package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/forkbomb/forkbomb/internal/event"
)

// RunOpenAI runs the same tool loop against any OpenAI-compatible chat
// completions endpoint (OpenAI, or local models behind vLLM, Ollama,
// llama.cpp), streaming, with the SDK's retries.
func RunOpenAI(ctx context.Context, cfg Config, task string) (*Result, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://api.openai.com/v1"
	}
	if err := CheckEndpoint(cfg.BaseURL); err != nil {
		return nil, err
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 30
	}
	if cfg.Event == nil {
		cfg.Event = func(event.Kind, map[string]any) {}
	}
	client := openai.NewClient(
		option.WithBaseURL(strings.TrimSuffix(cfg.BaseURL, "/")+"/"),
		option.WithAPIKey(cfg.APIKey),
		option.WithHTTPClient(noRedirects),
		option.WithMaxRetries(4),
	)
	fn := func(name, desc string, props map[string]any, req []string) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name, Description: openai.String(desc),
			Parameters: shared.FunctionParameters{"type": "object", "properties": props, "required": req},
		})
	}
	tools := []openai.ChatCompletionToolUnionParam{
		fn("shell", shellDescription, shellSchema, []string{"command"}),
		fn("editor", editorDescription, editorSchema, []string{"command", "path"}),
	}
	var messages []openai.ChatCompletionMessageParamUnion
	if cfg.System != "" {
		messages = append(messages, openai.SystemMessage(cfg.System))
	}
	messages = append(messages, openai.UserMessage(task))
	res := &Result{}
	for res.Turns < cfg.MaxTurns {
		res.Turns++
		params := openai.ChatCompletionNewParams{
			Model: cfg.Model, Messages: messages, Tools: tools,
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		}
		if cfg.MaxTokens > 0 {
			params.MaxCompletionTokens = openai.Int(cfg.MaxTokens)
		}
		cfg.Event(event.ModelRequest, map[string]any{"turn": res.Turns, "messages": len(messages)})
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			return res, fmt.Errorf("model: %w", err)
		}
		if len(acc.Choices) == 0 {
			return res, fmt.Errorf("model: an empty response")
		}
		res.TokensIn += acc.Usage.PromptTokens
		res.TokensOut += acc.Usage.CompletionTokens
		msg := acc.Choices[0].Message
		cfg.Event(event.ModelResponse, map[string]any{"turn": res.Turns, "stop_reason": acc.Choices[0].FinishReason,
			"input_tokens": acc.Usage.PromptTokens, "output_tokens": acc.Usage.CompletionTokens, "text": truncate(msg.Content, 64<<10)})
		messages = append(messages, msg.ToParam())
		if len(msg.ToolCalls) == 0 {
			res.Stop = acc.Choices[0].FinishReason
			return res, nil
		}
		for _, tc := range msg.ToolCalls {
			out, isErr := callTool(ctx, cfg, tc.Function.Name, json.RawMessage(tc.Function.Arguments))
			cfg.Event(event.ToolCall, map[string]any{"turn": res.Turns, "tool": tc.Function.Name, "input": json.RawMessage(tc.Function.Arguments)})
			cfg.Event(event.ToolResult, map[string]any{"turn": res.Turns, "tool": tc.Function.Name, "error": isErr, "output": truncate(out, 64<<10)})
			if isErr {
				out = "error: " + out
			}
			messages = append(messages, openai.ToolMessage(out, tc.ID))
		}
	}
	res.Stop = "max_turns"
	return res, nil
}
