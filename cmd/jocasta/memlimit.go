package main

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// replayMemoryShare is the share of the machine's (or the container's)
// memory an offline replay lets its heap reach before the collector
// works harder: replayGCPercent lets the heap grow to five times what is
// live, and a 90-day log of 1,000 devices keeps about 470 MB live at its
// peak, so without a limit the heap reached 2.0–2.5 GB (1.0 GB with
// GOGC=100, in the same 44 s): more than a 2 GB Raspberry Pi has.
const replayMemoryShare = 2 // half

// tuneReplayGC sets the collector of an offline replay: replayGCPercent,
// and a soft memory limit of half the memory the process may use, unless
// the environment configures the collector (tuneGC). It returns the
// limit set, 0 when none.
func tuneReplayGC() int64 {
	if !tuneGC(replayGCPercent) {
		return 0
	}
	total := memoryAvailable("/proc/meminfo", "/proc/self/cgroup", "/sys/fs/cgroup")
	if total <= 0 {
		return 0
	}
	limit := total / replayMemoryShare
	debug.SetMemoryLimit(limit)
	return limit
}

// memoryAvailable is the memory the process may use, in bytes: the
// machine's (MemTotal in meminfo), or the lowest memory limit of the
// process's cgroup and its ancestors when that is lower (procCgroup is
// /proc/self/cgroup, cgroupRoot /sys/fs/cgroup; cgroup v2's memory.max
// and v1's memory.limit_in_bytes are both read). 0 when neither can be
// read.
func memoryAvailable(meminfo, procCgroup, cgroupRoot string) int64 {
	total := machineMemory(meminfo)
	if n := cgroupLimit(procCgroup, cgroupRoot); n > 0 && (total == 0 || n < total) {
		total = n
	}
	return total
}

// machineMemory is MemTotal of meminfo (/proc/meminfo) in bytes, 0 when
// it cannot be read.
func machineMemory(meminfo string) int64 {
	f, err := os.Open(meminfo)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil && kb > 0 {
				return kb << 10
			}
			break
		}
	}
	return 0
}

// serveMemoryLimit is the soft memory limit serve sets for its collector
// when it runs under a memory limit lower than the machine's memory (a
// container's, a systemd unit's MemoryMax; cgroup is that limit, machine
// the machine's memory, 0 when unknown): the limit less a reserve for
// what the kernel charges to the same cgroup beside the Go runtime's
// memory (the pages of the executable and of the database that serve
// maps, and the page cache of its writes), an eighth of it and at least
// 16 MiB, but never less than half of it. Without it the collector
// paces only by GOGC and would let the heap grow past the limit at a
// peak (a flow window applied, a rebuild), and the kernel would kill
// serve instead of the collector working harder. 0 when there is no such
// limit.
func serveMemoryLimit(machine, cgroup int64) int64 {
	if cgroup <= 0 || (machine > 0 && cgroup >= machine) {
		return 0
	}
	reserve := max(cgroup/8, 16<<20)
	return max(cgroup-reserve, cgroup/2)
}

// tuneServeGC sets serve's collector unless the environment configures
// it (tuneGC): serveGCPercent, and the soft memory limit of
// serveMemoryLimit under a cgroup's memory limit. It reports whether it
// set the collector, the limit set (0 for none) and the cgroup's limit.
func tuneServeGC(meminfo, procCgroup, cgroupRoot string) (set bool, limit, cgroup int64) {
	if !tuneGC(serveGCPercent) {
		return false, 0, 0
	}
	cgroup = cgroupLimit(procCgroup, cgroupRoot)
	if limit = serveMemoryLimit(machineMemory(meminfo), cgroup); limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return true, limit, cgroup
}

// cgroupLimit is the lowest memory limit set on the process's cgroups
// (v2, and v1's memory controller) or their ancestors, 0 for none.
func cgroupLimit(procCgroup, root string) int64 {
	b, err := os.ReadFile(procCgroup)
	if err != nil {
		return 0
	}
	var lowest int64
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-id:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			continue
		}
		var dir, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir, file = root, "memory.max"
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			dir, file = filepath.Join(root, "memory"), "memory.limit_in_bytes"
		default:
			continue
		}
		for p := filepath.Clean(parts[2]); ; p = filepath.Dir(p) {
			v, err := os.ReadFile(filepath.Join(dir, p, file))
			// "max" (v2) means no limit; v1 says so with a huge number,
			// above any machine's memory, which MemTotal then wins over.
			if n, perr := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64); err == nil && perr == nil && n > 0 && (lowest == 0 || n < lowest) {
				lowest = n
			}
			if p == "/" {
				break
			}
		}
	}
	return lowest
}
