package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// capCPU puts process pid into a new control group name whose CPU is
// capped at quota CPUs (cgroup v2's cpu.max, or v1's CFS quota), and
// returns what removes the group once the process is gone. It needs the
// rights to make control groups (root, or a delegated subtree).
func capCPU(name string, pid int, quota float64) (func(), error) {
	period := 100000
	limit := int(quota * float64(period))
	var dir string
	var files [][2]string
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dir = filepath.Join("/sys/fs/cgroup", name)
		files = [][2]string{{"cpu.max", fmt.Sprintf("%d %d", limit, period)}}
	} else {
		dir = filepath.Join("/sys/fs/cgroup/cpu", name)
		files = [][2]string{{"cpu.cfs_period_us", strconv.Itoa(period)}, {"cpu.cfs_quota_us", strconv.Itoa(limit)}}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return func() {}, fmt.Errorf("make a control group: %w", err)
	}
	release := func() {
		for range 50 { // the group goes once its process has
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	files = append(files, [2]string{"cgroup.procs", strconv.Itoa(pid)})
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
			return release, fmt.Errorf("%s: %w", f[0], err)
		}
	}
	return release, nil
}

// processCPUOf is the CPU time process pid has used, user and system
// (from /proc, in clock ticks of 10 ms).
func processCPUOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
