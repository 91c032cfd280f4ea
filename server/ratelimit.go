package server

import (
	"math"
	"sync"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/oncegate/oncegate/adapters/codes"
	"github.com/oncegate/oncegate/server/config"
)

// limiters holds one token-bucket limiter per agent token.
type limiters struct {
	mu    sync.Mutex
	every rate.Limit
	burst int
	m     map[int64]*rate.Limiter
}

func newLimiters(c config.RateLimitConfig) *limiters {
	return &limiters{every: rate.Limit(c.PerSecond), burst: c.Burst, m: map[int64]*rate.Limiter{}}
}

func (l *limiters) get(id int64) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[id]
	if !ok {
		lim = rate.NewLimiter(l.every, l.burst)
		l.m[id] = lim
	}
	return lim
}

// rateLimit refuses a token's request beyond its rate with 429 and a
// Retry-After saying when a request will be allowed again. It runs after
// authentication, so it is per token.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Context().Value(inProcessKey{}) != nil {
			return next(c) // an MCP tool call, counted once already at /mcp
		}
		lim := s.limiters.get(token(c).ID)
		r := lim.Reserve()
		if d := r.Delay(); d > 0 {
			r.Cancel()
			e := codes.New(codes.RateLimited, "", "too many requests for this token; slow down and send the same request again after Retry-After")
			e.RetryAfter = max(1, int(math.Ceil(d.Seconds())))
			return e
		}
		return next(c)
	}
}

// inProcessKey marks a request the gateway makes to its own API (an MCP
// tool call), which its MCP request already paid for.
type inProcessKey struct{}
