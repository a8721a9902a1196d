package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pageRange is a range of the process's address space, [start, end).
type pageRange struct{ start, end uintptr }

// executablePages are the mappings of serve's own executable that hold
// only the file's pages: its code and read-only data. Like the
// database's, every page of them that was ever touched stays counted in
// the resident set (RssFile) until the kernel wants the memory back,
// and most were touched once: at start, by the package initializers,
// the configuration, the projections' load, and the kernel maps 64 KiB
// around each page a fault reads (fault-around). With 10,000 devices
// that was 23-25 MB of serve's resident set while the code running at
// any moment needs a few MB. Dropping them from the mapping
// (madvise(MADV_DONTNEED)) leaves them in the page cache: the code that
// runs next maps its pages again with a minor fault, no I/O.
type executablePages []pageRange

// findExecutablePages reads the process's mappings (/proc/self/smaps)
// for those of its executable that it may drop.
func findExecutablePages() (executablePages, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("find the executable: %w", err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("read the process's mappings: %w", err)
	}
	defer f.Close()
	return parseExecutablePages(f, exe)
}

// parseExecutablePages reads smaps (the format of /proc/PID/smaps) for
// the mappings of the file at path that are not writable and hold no
// anonymous page. A private mapping's pages become anonymous when they
// are written (copy on write): the writable data, and a read-only
// mapping that was written before it was made read-only (the relocated
// data of a dynamically linked binary). Dropping those would lose what
// was written, so only mappings whose every page is the file's qualify.
func parseExecutablePages(smaps io.Reader, path string) (executablePages, error) {
	var pages executablePages
	var cur pageRange
	candidate := false
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Text()
		key, value, isField := strings.Cut(line, ":")
		if isField && !strings.Contains(key, " ") {
			// A field of the current mapping ("Anonymous:    0 kB").
			if candidate && key == "Anonymous" && strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")) != "0" {
				candidate = false
			}
			continue
		}
		// A mapping: start-end perms offset dev inode [path]
		if candidate {
			pages = append(pages, cur)
		}
		candidate = false
		fields := strings.SplitN(line, " ", 6)
		if len(fields) < 6 || strings.TrimLeft(fields[5], " ") != path || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("read the process's mappings: a mapping %q", fields[0])
		}
		cur, candidate = pageRange{uintptr(start), uintptr(end)}, true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the process's mappings: %w", err)
	}
	if candidate {
		pages = append(pages, cur)
	}
	return pages, nil
}

// release drops the pages from the process's memory map. The code that
// runs meanwhile (this function's included) maps its pages again. It
// does nothing while a debugger traces the process: the breakpoints it
// writes into the code are such anonymous pages, made after the
// mappings were chosen.
func (p executablePages) release() error {
	if len(p) == 0 || traced("/proc/self/status") {
		return nil
	}
	for _, r := range p {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.start, r.end-r.start, unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("release the executable's pages at %#x: %w", r.start, errno)
		}
	}
	return nil
}

// traced reports whether status (/proc/self/status) names a tracer.
func traced(status string) bool {
	b, err := os.ReadFile(status)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}
