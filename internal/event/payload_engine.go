package event

// What forkbomb's own tool loop (the api and hosted engines) and the
// model proxy say.

// ModelRequestData: the api loop calls the model.
type ModelRequestData struct {
	Turn     int `json:"turn"`
	Messages int `json:"messages"`
}

// ModelResponseData: the model's answer to the api loop.
type ModelResponseData struct {
	Turn         int    `json:"turn"`
	StopReason   string `json:"stop_reason"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	Text         string `json:"text"` // up to 64 KiB
}

// ToolCallData: the model called a tool of the api loop.
type ToolCallData struct {
	Turn  int    `json:"turn"`
	Tool  string `json:"tool"` // shell or editor
	Input JSON   `json:"input"`
}

// ToolResultData: what the tool returned.
type ToolResultData struct {
	Turn   int    `json:"turn"`
	Tool   string `json:"tool"`
	Error  bool   `json:"error"`
	Output string `json:"output"` // up to 64 KiB
}

// LimitData: a resource limit ended one shell command of the api loop
// (the agent goes on).
type LimitData struct {
	Reason  string `json:"reason"`
	Command string `json:"command"`
}

// SourceGateway marks what the hosted engine's gateway said.
const SourceGateway = "gateway"

// GatewayUsageData: what the gateway charged a fork (hosted engine, once
// per fork at its end), and the balance left.
type GatewayUsageData struct {
	Source          string `json:"source"` // SourceGateway
	Tag             string `json:"tag"`    // the fork's call tag, <engine id>/<fork>
	Calls           int64  `json:"calls"`
	Open            int64  `json:"open"` // calls not settled yet
	ChargedMicroUSD int64  `json:"charged_micro_usd"`
	TokensIn        int64  `json:"tokens_in"`
	TokensOut       int64  `json:"tokens_out"`
	BalanceMicroUSD int64  `json:"balance_micro_usd"`
}

// ViaProxy marks the model proxy's events.
const ViaProxy = "proxy"

// ProxyRequestData: a fork's request passed the model proxy.
type ProxyRequestData struct {
	Via   string `json:"via"`   // ViaProxy
	Path  string `json:"path"`  // no query
	Model string `json:"model"` // from the request's JSON, bounded
}

// ProxyResponseData: the upstream's answer, metered by the proxy (never
// by what the fork says).
type ProxyResponseData struct {
	Via          string `json:"via"`
	Path         string `json:"path"`
	Model        string `json:"model"`
	Status       int    `json:"status"`
	TokensIn     int64  `json:"tokens_in"`
	TokensOut    int64  `json:"tokens_out"`
	CostMicroUSD int64  `json:"cost_micro_usd"`
	MS           int64  `json:"ms"`
}

// ProxyRefusalData: the proxy answered a request itself, refusing it.
type ProxyRefusalData struct {
	Via  string `json:"via"`
	Path string `json:"path"`
	// Model is set once the request's body was read.
	Model  *string `json:"model,omitempty"`
	Status int     `json:"status"`
	Reason string  `json:"reason"`
}

// NetConnectData: a fork asked the proxy for a host (--network allow:).
type NetConnectData struct {
	Host    string `json:"host"`
	Port    *int   `json:"port,omitempty"` // absent when not a number
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason,omitempty"` // refused, or the dial failed
}

func (ModelRequestData) Kind() Kind  { return ModelRequest }
func (ModelResponseData) Kind() Kind { return ModelResponse }
func (ToolCallData) Kind() Kind      { return ToolCall }
func (ToolResultData) Kind() Kind    { return ToolResult }
func (LimitData) Kind() Kind         { return Limit }
func (GatewayUsageData) Kind() Kind  { return GatewayUsage }
func (ProxyRequestData) Kind() Kind  { return ModelRequest }
func (ProxyResponseData) Kind() Kind { return ModelResponse }
func (ProxyRefusalData) Kind() Kind  { return ModelResponse }
func (NetConnectData) Kind() Kind    { return NetConnect }
