package judge

// Finding is one construct that detects or inspects a test run, in what a
// patch adds outside tests. (Placeholder until the inspector lands.)
type Finding struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Rule      string `json:"rule"`
	Construct string `json:"construct"`
	Text      string `json:"text"`
}
