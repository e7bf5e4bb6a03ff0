package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Mistakes on the command line, in the user's words: cobra and pflag
// report them in their own (`accepts between 1 and 2 arg(s)`, `invalid
// argument "high" for "--priority" flag: strconv.ParseInt: parsing
// "high": invalid syntax`), which name Go functions rather than what the
// command expected. The flag errors are pflag's typed errors, told apart
// with errors.As; the argument counts come from each command's Use line,
// which its help shows, so that the message and the help agree.

// flagError is the root's FlagErrorFunc: every command's flag errors go
// through it.
func flagError(cmd *cobra.Command, err error) error {
	var invalid *pflag.InvalidValueError
	var needsValue *pflag.ValueRequiredError
	var notExist *pflag.NotExistError
	var syntax *pflag.InvalidSyntaxError
	switch {
	case errors.As(err, &invalid):
		return invalidFlagValue(invalid)
	case errors.As(err, &needsValue):
		f := needsValue.GetFlag()
		return fmt.Errorf("--%s needs a value: %s", f.Name, f.Usage)
	case errors.As(err, &notExist):
		return unknownFlag(cmd, notExist)
	case errors.As(err, &syntax):
		return fmt.Errorf("%q is not a flag: a flag is -x or --name (see '%s --help')", syntax.GetSpecifiedFlag(), cmd.CommandPath())
	}
	return err
}

// invalidFlagValue says what the flag takes and what it was given.
func invalidFlagValue(e *pflag.InvalidValueError) error {
	f, v := e.GetFlag(), e.GetValue()
	name := "--" + f.Name
	switch t := f.Value.Type(); t {
	case "int", "int8", "int16", "int32", "int64":
		if errors.Is(e, strconv.ErrRange) {
			bits := map[string]uint{"int": strconv.IntSize, "int8": 8, "int16": 16, "int32": 32, "int64": 64}[t]
			lo, hi := -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1
			return fmt.Errorf("%s must be a whole number from %d to %d, got %q", name, lo, hi, v)
		}
		return fmt.Errorf("%s wants a whole number, got %q", name, v)
	case "uint", "uint8", "uint16", "uint32", "uint64":
		if errors.Is(e, strconv.ErrRange) {
			return fmt.Errorf("%s is too large: %q", name, v)
		}
		return fmt.Errorf("%s wants a whole number, 0 or more, got %q", name, v)
	case "float32", "float64":
		return fmt.Errorf("%s wants a number, got %q", name, v)
	case "duration":
		hint := ""
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			hint = " (a number needs its unit: ms, s, m or h)"
		}
		return fmt.Errorf("%s wants a duration such as 500ms, 30s, 10m or 1h30m, got %q%s", name, v, hint)
	case "bool":
		return fmt.Errorf("%s is a switch: give it alone, or as %s=true or %s=false; got %q", name, name, name, v)
	case "stringSlice", "stringArray":
		return fmt.Errorf("%s: %q is not a comma-separated list (put an item that holds a comma or a quote in double quotes)", name, v)
	case "intSlice", "int32Slice", "int64Slice", "uintSlice":
		return fmt.Errorf("%s wants whole numbers separated by commas, got %q", name, v)
	case "durationSlice":
		return fmt.Errorf("%s wants durations such as 30s or 10m separated by commas, got %q", name, v)
	}
	return fmt.Errorf("%s does not take %q", name, v)
}

// unknownFlag names the flag that is not one of the command's, with the
// ones it may have meant.
func unknownFlag(cmd *cobra.Command, e *pflag.NotExistError) error {
	path := cmd.CommandPath()
	help := fmt.Sprintf("'%s --help' lists its flags", path)
	if group := e.GetSpecifiedShortnames(); group != "" {
		if looksNumeric(group) {
			return fmt.Errorf("-%s is not a flag of %s: a value that starts with '-' goes after '--', as in: %s -- -%s", group, path, path, group)
		}
		if f := cmd.Flags().Lookup(group); f != nil && len(group) > 1 {
			return fmt.Errorf("unknown flag -%s for %s; did you mean --%s? (a flag's full name takes two dashes)", group, path, f.Name)
		}
		name := e.GetSpecifiedName()
		if name == group {
			return fmt.Errorf("unknown flag -%s for %s; %s", name, path, help)
		}
		return fmt.Errorf("unknown flag -%s (in -%s) for %s; %s", name, group, path, help)
	}
	name := e.GetSpecifiedName()
	if near := nearFlags(cmd, name); len(near) > 0 {
		return fmt.Errorf("unknown flag --%s for %s; did you mean %s?", name, path, orList(near))
	}
	return fmt.Errorf("unknown flag --%s for %s; %s", name, path, help)
}

func looksNumeric(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	if err == nil {
		return true
	}
	// A negative duration: -5s, -1h30m.
	return len(s) > 0 && s[0] >= '0' && s[0] <= '9'
}

// nearFlags are the command's flags (its own and those it inherits) whose
// name is within the root's suggestion distance of name, or starts with
// it.
func nearFlags(cmd *cobra.Command, name string) []string {
	var near []string
	dist := cmd.Root().SuggestionsMinimumDistance
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if editDistance(strings.ToLower(name), f.Name) <= dist || (len(name) > 1 && strings.HasPrefix(f.Name, name)) {
			near = append(near, "--"+f.Name)
		}
	})
	return near
}

// editDistance is the Levenshtein distance between a and b, by rune.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// argRange is how many arguments a command takes by its Use line:
// "enqueue KIND [JSON_ARGS]" takes 1 or 2, "decode [FILE|-]" 0 or 1, a
// word ending in "..." any number; a flag in it ("create --spec FILE")
// is not an argument, nor is its value. max is -1 for no limit. words is
// the arguments as the Use line names them.
func argRange(cmd *cobra.Command) (lo, hi int, words string) {
	fields := strings.Fields(cmd.Use)
	var names []string
	for i := 1; i < len(fields); i++ {
		w := fields[i]
		if strings.HasPrefix(w, "-") {
			i++ // its value
			continue
		}
		names = append(names, w)
		switch {
		case strings.HasSuffix(w, "...") || strings.HasSuffix(w, "...]"):
			hi = -1
		case hi >= 0:
			hi++
		}
		if !strings.HasPrefix(w, "[") {
			lo++
		}
	}
	return lo, hi, strings.Join(names, " ")
}

// userArgs wraps the argument check of cmd and of every command under it,
// so that a wrong number of arguments, or a mistyped subcommand, is told
// in the user's words. A check that fails for another reason (a value it
// parses) keeps its own error, which is in the user's words already.
func userArgs(cmd *cobra.Command) {
	// A command without a check is left to cobra, which takes any
	// arguments for it (cobra's help takes a command's path).
	if check := cmd.Args; check != nil {
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			if err == nil {
				return nil
			}
			return argsError(cmd, args, err)
		}
	}
	for _, sub := range cmd.Commands() {
		userArgs(sub)
	}
}

func argsError(cmd *cobra.Command, args []string, err error) error {
	path := cmd.CommandPath()
	lo, hi, words := argRange(cmd)
	switch {
	case hi == 0 && cmd.HasAvailableSubCommands() && len(args) > 0:
		if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
			return fmt.Errorf("unknown command %q for %s; did you mean %s?", args[0], path, orList(quoteAll(near)))
		}
		return fmt.Errorf("unknown command %q for %s; '%s --help' lists its commands", args[0], path, path)
	case hi == 0 && len(args) > 0:
		return fmt.Errorf("%s takes no arguments, got %s", path, gotArgs(args))
	case len(args) < lo:
		return fmt.Errorf("%s needs %s, got %s", path, words, gotArgs(args))
	case hi >= 0 && len(args) > hi:
		return fmt.Errorf("%s takes %s, got %s (quote an argument that contains spaces)", path, words, gotArgs(args))
	}
	return err
}

// gotArgs is what the user gave: "no arguments", `1 argument ("a")`.
func gotArgs(args []string) string {
	switch len(args) {
	case 0:
		return "no arguments"
	case 1:
		return fmt.Sprintf("1 argument (%q)", args[0])
	}
	return fmt.Sprintf("%d arguments (%s)", len(args), strings.Join(quoteAll(args), " "))
}

func quoteAll(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = strconv.Quote(s)
	}
	return out
}
