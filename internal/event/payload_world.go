package event

// What a world race says (internal/worldrace), until worlds race through
// the race of internal/run as a fork backend and record its events.

// WorldRunStartData: a world race began from the world file.
type WorldRunStartData struct {
	Forks int    `json:"forks"`
	World string `json:"world"`
}

// WorldForkStartData: an agent began in its branch of the world.
type WorldForkStartData struct {
	World string `json:"world"` // branch-<n>
}

// WorldForkExitData: a branch's agent stopped.
type WorldForkExitData struct {
	State  ForkState `json:"state"`
	Reason string    `json:"reason"`
}

// WorldJudgeStartData: the check began on a branch (no data).
type WorldJudgeStartData struct{}

// WorldVerdictData: the check's word on a branch.
type WorldVerdictData struct {
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
}

// WorldWinnerData: a branch won; its world was kept as this file.
type WorldWinnerData struct {
	World string `json:"world"`
}

// WorldRunEndData: the world race ended.
type WorldRunEndData struct {
	Status RunStatus `json:"status"`
}

func (WorldRunStartData) Kind() Kind   { return RunStart }
func (WorldForkStartData) Kind() Kind  { return ForkStart }
func (WorldForkExitData) Kind() Kind   { return ForkExit }
func (WorldJudgeStartData) Kind() Kind { return JudgeStart }
func (WorldVerdictData) Kind() Kind    { return VerdictGiven }
func (WorldWinnerData) Kind() Kind     { return Winner }
func (WorldRunEndData) Kind() Kind     { return RunEnd }
