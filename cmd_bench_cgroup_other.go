//go:build !linux

package main

import (
	"errors"
	"time"
)

// capCPU needs Linux's control groups.
func capCPU(string, int, float64) (func(), error) {
	return func() {}, errors.New("capping a gateway's CPU needs Linux control groups")
}

// processCPUOf is not read here.
func processCPUOf(int) time.Duration { return 0 }
