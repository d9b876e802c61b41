package mutant

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Stryker's mutation-testing-report-schema (version 1 fields, which
// version 2 viewers read too): one entry per file, with its source and its
// mutants' locations (1-based lines and columns) and statuses.
type strykerReport struct {
	SchemaVersion string                 `json:"schemaVersion"`
	Thresholds    strykerThresholds      `json:"thresholds"`
	ProjectRoot   string                 `json:"projectRoot,omitempty"`
	Files         map[string]strykerFile `json:"files"`
}

type strykerThresholds struct {
	High int `json:"high"`
	Low  int `json:"low"`
}

type strykerFile struct {
	Language string          `json:"language"`
	Source   string          `json:"source"`
	Mutants  []strykerMutant `json:"mutants"`
}

type strykerMutant struct {
	ID           string          `json:"id"`
	MutatorName  string          `json:"mutatorName"`
	Replacement  string          `json:"replacement"`
	Location     strykerLocation `json:"location"`
	Status       Status          `json:"status"`
	StatusReason string          `json:"statusReason,omitempty"`
}

type strykerLocation struct {
	Start strykerPos `json:"start"`
	End   strykerPos `json:"end"`
}

type strykerPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

func language(file string) string {
	switch {
	case strings.HasSuffix(file, ".go"):
		return "go"
	case strings.HasSuffix(file, ".py"):
		return "python"
	}
	return "javascript"
}

// WriteStryker writes the report in the mutation-testing-report-schema.
func (r *Report) WriteStryker(w io.Writer) error {
	out := strykerReport{SchemaVersion: "1", Thresholds: strykerThresholds{High: 80, Low: 60}, Files: map[string]strykerFile{}}
	for _, res := range r.Results {
		f, ok := out.Files[res.File]
		if !ok {
			f = strykerFile{Language: language(res.File), Source: strings.ToValidUTF8(string(r.Sources[res.File]), "\uFFFD"), Mutants: []strykerMutant{}}
		}
		f.Mutants = append(f.Mutants, strykerMutant{
			ID: res.ID, MutatorName: res.Operator, Replacement: res.Replacement, Status: res.Status, StatusReason: res.Reason,
			Location: strykerLocation{Start: strykerPos{res.Line, res.Column}, End: strykerPos{res.EndLine, res.EndColumn}},
		})
		out.Files[res.File] = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// FileScore is one file's tally.
type FileScore struct {
	File   string
	Counts map[Status]int
}

// Score is Stryker's mutation score: killed and timed-out mutants over
// those that compiled and were run or not covered, in percent; -1 when
// there are none.
func (s FileScore) Score() float64 {
	detected := s.Counts[Killed] + s.Counts[Timeout]
	valid := detected + s.Counts[Survived] + s.Counts[NoCoverage]
	if valid == 0 {
		return -1
	}
	return 100 * float64(detected) / float64(valid)
}

// Scores tallies per file, in file order, and the total.
func (r *Report) Scores() (files []FileScore, total FileScore) {
	by := map[string]*FileScore{}
	total = FileScore{File: "total", Counts: map[Status]int{}}
	for _, res := range r.Results {
		f := by[res.File]
		if f == nil {
			f = &FileScore{File: res.File, Counts: map[Status]int{}}
			by[res.File] = f
		}
		f.Counts[res.Status]++
		total.Counts[res.Status]++
	}
	for _, f := range by {
		files = append(files, *f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].File < files[j].File })
	return files, total
}

// WriteSummary writes the terminal summary: the score per file, then
// each surviving mutant as a diff (at most maxDiffs of them).
func (r *Report) WriteSummary(w io.Writer, maxDiffs int) {
	files, total := r.Scores()
	fmt.Fprintf(w, "%-40s %7s %6s %8s %7s %9s %9s %7s\n", "file", "score", "killed", "survived", "timeout", "no-compile", "uncovered", "ignored")
	row := func(f FileScore) {
		score := "n/a"
		if s := f.Score(); s >= 0 {
			score = fmt.Sprintf("%.1f%%", s)
		}
		fmt.Fprintf(w, "%-40s %7s %6d %8d %7d %9d %9d %7d\n", f.File, score, f.Counts[Killed], f.Counts[Survived], f.Counts[Timeout], f.Counts[CompileError], f.Counts[NoCoverage], f.Counts[Ignored])
	}
	for _, f := range files {
		row(f)
	}
	row(total)
	shown := 0
	for _, res := range r.Results {
		if res.Status != Survived {
			continue
		}
		if shown == maxDiffs {
			fmt.Fprintf(w, "\n… %d more surviving mutants (see the JSON report)\n", total.Counts[Survived]-shown)
			break
		}
		if shown == 0 {
			fmt.Fprintln(w, "\nSurviving mutants:")
		}
		fmt.Fprintln(w)
		fmt.Fprint(w, res.Diff(r.Sources[res.File]))
		shown++
	}
}
