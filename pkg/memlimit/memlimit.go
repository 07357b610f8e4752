// Package memlimit sets the Go runtime's soft memory limit from the memory
// limit of the cgroup (the container) the process runs in, so that the
// collector works harder as the process nears its limit instead of leaving
// garbage that gets the container OOM-killed.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// unlimited is where cgroup v1 starts saying "no limit": it reports the
// largest page-aligned int64.
const unlimited = int64(1) << 62

// Limit is the memory limit of the cgroup that procSelfCgroup (the content
// of /proc/self/cgroup) names, read from the cgroup file systems mounted at
// sys/fs/cgroup in fsys (the root file system): the smallest limit of the
// cgroup and its ancestors, as the kernel applies them. Zero: no limit.
// cgroup v2 (memory.max) is read where it is mounted, v1's memory
// controller (memory.limit_in_bytes) otherwise. A cgroup path that the
// mount does not show (a container without a cgroup namespace sees its
// own cgroup at the mount's root) counts as its nearest visible ancestor.
func Limit(fsys fs.FS, procSelfCgroup []byte) (int64, error) {
	var v1, v2 string
	found1, found2 := false, false
	sc := bufio.NewScanner(bytes.NewReader(procSelfCgroup))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2, found2 = parts[2], true
		case containsController(parts[1], "memory"):
			v1, found1 = parts[2], true
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if found2 {
		if _, err := fs.Stat(fsys, "sys/fs/cgroup/cgroup.controllers"); err == nil {
			return smallest(fsys, "sys/fs/cgroup", v2, "memory.max")
		}
	}
	if found1 {
		return smallest(fsys, "sys/fs/cgroup/memory", v1, "memory.limit_in_bytes")
	}
	return 0, nil
}

func containsController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// smallest is the smallest limit in file of the cgroup at cgroupPath under
// mount and of its ancestors; zero when none has one.
func smallest(fsys fs.FS, mount, cgroupPath, file string) (int64, error) {
	var limit int64
	p := path.Clean("/" + cgroupPath)
	for {
		name := path.Join(mount, p, file)
		data, err := fs.ReadFile(fsys, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, err
		default:
			l, err := parseLimit(data)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", "/"+name, err)
			}
			if l > 0 && (limit == 0 || l < limit) {
				limit = l
			}
		}
		if p == "/" {
			return limit, nil
		}
		p = path.Dir(p)
	}
}

// parseLimit reads a limit file: "max" or a huge number mean none.
func parseLimit(data []byte) (int64, error) {
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a memory limit: %q", s)
	}
	if n >= uint64(unlimited) {
		return 0, nil
	}
	return int64(n), nil
}

// Apply sets the runtime's soft memory limit to ratio of the cgroup's
// memory limit and returns what it set, zero when it set nothing: when
// GOMEMLIMIT is set (the user's choice wins), ratio is zero, or there is no
// limit.
func Apply(ratio float64) (int64, error) {
	if err := ValidateRatio(ratio); err != nil {
		return 0, err
	}
	if ratio == 0 || os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	cgroups, err := os.ReadFile("/proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return apply(ratio, os.DirFS("/"), cgroups)
}

// ValidateRatio refuses a ratio outside [0, 1].
func ValidateRatio(ratio float64) error {
	if ratio < 0 || ratio > 1 || math.IsNaN(ratio) {
		return fmt.Errorf("the memory limit ratio must be between 0 and 1, not %v", ratio)
	}
	return nil
}

func apply(ratio float64, fsys fs.FS, cgroups []byte) (int64, error) {
	limit, err := Limit(fsys, cgroups)
	if err != nil || limit == 0 {
		return 0, err
	}
	soft := int64(float64(limit) * ratio)
	debug.SetMemoryLimit(soft)
	return soft, nil
}
