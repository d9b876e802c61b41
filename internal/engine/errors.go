package engine

import (
	"errors"
	"fmt"
)

// ErrUnknownEngine: New was given a name no engine has.
var ErrUnknownEngine = errors.New("unknown engine")

// SettingsError says which setting of which engine is missing or wrong.
// Msg is worded for the person who gave the setting.
type SettingsError struct {
	Engine  string // "command", "api"
	Setting string // the Settings field: "Argv", "Provider", "APIKey"
	Msg     string
}

func (e *SettingsError) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	return fmt.Sprintf("the %s engine: setting %s is missing or wrong", e.Engine, e.Setting)
}
