package latency

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PeakRSS is the process's peak resident set size in bytes: VmHWM in
// /proc/self/status (Linux), since the process started or since the last
// ResetPeakRSS. The kernel updates VmHWM lazily, so it can trail the
// current VmRSS; the larger of the two is returned.
func PeakRSS() (int64, error) {
	hwm, err := procStatus("VmHWM")
	if err != nil {
		return 0, err
	}
	rss, err := procStatus("VmRSS")
	if err != nil {
		return 0, err
	}
	return max(hwm, rss), nil
}

// RSS is the process's resident set size now (VmRSS), in bytes.
func RSS() (int64, error) { return procStatus("VmRSS") }

// ResetPeakRSS resets the peak to the current RSS (writing 5 to
// /proc/self/clear_refs, Linux 4.0+), so that the next PeakRSS covers
// what happens from now on.
func ResetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func procStatus(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("/proc/self/status: cannot read %s %q", field, value)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/self/status: %s: %w", field, err)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("/proc/self/status has no " + field)
}
