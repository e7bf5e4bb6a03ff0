package mysqldsn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// checkParams refuses, in the user's words, the parameters go-sql-driver
// would refuse in Go's (strconv.Atoi: parsing …) or not refuse at all:
// strict makes its ParseDSN panic.
func checkParams(query string) error {
	for pair := range strings.SplitSeq(query, "&") {
		// go-sql-driver matches keys as written and skips pairs without '='.
		key, value, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		switch key {
		case "strict":
			return errors.New("the strict parameter was removed from go-sql-driver (its strict mode is gone); leave it out")
		case "timeout", "readTimeout", "writeTimeout", "timeTruncate":
			if _, err := time.ParseDuration(value); err != nil {
				return fmt.Errorf("parameter %s=%q is not a duration such as 5s or 500ms", key, value)
			}
		case "maxAllowedPacket":
			if _, err := strconv.Atoi(value); err != nil {
				return fmt.Errorf("parameter maxAllowedPacket=%q is not a whole number of bytes", value)
			}
		}
	}
	return nil
}
