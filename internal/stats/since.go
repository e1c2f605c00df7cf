package stats

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrSince reports a --since value that is not a duration.
var ErrSince = errors.New("bad --since")

// ParseSince reads how far back a report looks: a Go duration ("36h", "90m", "1h30m")
// or a number of days ("7d"). It must be positive.
func ParseSince(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100*365 {
			return 0, fmt.Errorf("%w %q: give whole days (7d) up to 36500d, or a duration such as 36h or 90m", ErrSince, s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%w %q: give days (7d) or a duration such as 36h or 90m", ErrSince, s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w %q: the window must be longer than zero, such as 7d or 24h", ErrSince, s)
	}
	return d, nil
}
