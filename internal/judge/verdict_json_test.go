package judge

import (
	"encoding/json"
	"testing"

	"github.com/forkbomb/forkbomb/internal/event"
)

// TestVerdictJSON: verdict.json keeps its "pass" field, first, as it was
// written when it was a field of its own; it is derived from the verdict,
// so a review or a fail never reads as a pass. Decoding ignores it.
func TestVerdictJSON(t *testing.T) {
	tests := []struct {
		verdict event.Verdict
		want    string
	}{
		{event.Pass, `{"pass":true,"verdict":"pass","reason":"r","applied":true,"stripped":["a_test.go"],"exit_code":0,"timed_out":false,"results":null,"baseline":null,"score":{"baseline_tests":2,"passing_now":2,"fixed":1,"broken":0,"still_failing":0,"missing":0,"value":1},"test_command":"go test ./...","ran_command":"go test -json ./...","base":"abc","timings_ms":{"queue":0,"fork":1,"test":2,"total":3},"sentinels":null,"tampered":false}`},
		{event.Review, `{"pass":false,"verdict":"review","reason":"r","applied":true,"stripped":["a_test.go"],"exit_code":0,"timed_out":false,"results":null,"baseline":null,"score":{"baseline_tests":2,"passing_now":2,"fixed":1,"broken":0,"still_failing":0,"missing":0,"value":1},"test_command":"go test ./...","ran_command":"go test -json ./...","base":"abc","timings_ms":{"queue":0,"fork":1,"test":2,"total":3},"sentinels":null,"tampered":false}`},
		{event.Fail, `{"pass":false,"verdict":"fail","reason":"r","applied":true,"stripped":["a_test.go"],"exit_code":0,"timed_out":false,"results":null,"baseline":null,"score":{"baseline_tests":2,"passing_now":2,"fixed":1,"broken":0,"still_failing":0,"missing":0,"value":1},"test_command":"go test ./...","ran_command":"go test -json ./...","base":"abc","timings_ms":{"queue":0,"fork":1,"test":2,"total":3},"sentinels":null,"tampered":false}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.verdict), func(t *testing.T) {
			v := &Verdict{Verdict: tt.verdict, Reason: "r", Applied: true, Stripped: []string{"a_test.go"},
				Score: Score{BaselineTests: 2, PassingNow: 2, Fixed: 1, Value: 1}, TestCmd: "go test ./...",
				RanCmd: "go test -json ./...", Base: "abc", Timings: Timings{Fork: 1, Test: 2, Total: 3}, Output: "not written"}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("encoded\n%s\nwant\n%s", got, tt.want)
			}
			var back Verdict
			if err := json.Unmarshal(got, &back); err != nil || back.Verdict != tt.verdict || back.Reason != "r" {
				t.Errorf("decoded %+v, %v", back, err)
			}
		})
	}
}
