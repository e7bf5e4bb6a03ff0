package clienv

import (
	"encoding/json"
	"io"
	"text/tabwriter"
)

// JSON writes v as indented JSON: every command's --json looks the same.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table starts an aligned table, two spaces between columns, as every
// command's tables are.
func Table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}
