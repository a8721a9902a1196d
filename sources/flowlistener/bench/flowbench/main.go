// Command flowbench is the flow listener's load tool for `make
// bench-flows` (sources/flowlistener/bench/bench.sh): it sends NetFlow v9
// built by flowgen at a fixed rate, and counts the flows goflow2 wrote.
//
//	flowbench send --addr 127.0.0.1:2055 --rate 50000 --duration 10s --devices 10000 --peers 1000
//	flowbench count-goflow --file out.bin
//
// send writes one template datagram, then data datagrams of 30 records
// (the template resent every 16 datagrams, as softflowd does), each
// record a flow from one of devices hosts (10.0.0.0/8, numbered as
// cmd/jocasta-load seeds them) to one of peers peers (198.18.0.0/15),
// cycling through every (device, peer) pair; --offset starts the cycle
// further on. It paces datagrams to the rate and prints what it sent as
// one line: "sent <flows> flows in <datagrams> datagrams in <seconds>s".
//
// count-goflow reads goflow2's -format bin output written with
// -transport.file.sep "" (each flow a varint-length-delimited protobuf
// message) and prints the number of messages.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	fg "github.com/jocasta/jocasta/sources/flowlistener/flowgen"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: flowbench send|count-goflow [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "send":
		err = send(os.Args[2:])
	case "count-goflow":
		err = countGoflow(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want send or count-goflow", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flowbench:", err)
		os.Exit(1)
	}
}

const recsPerDatagram = 30

// device is the address cmd/jocasta-load seed gives device i.
func device(i int) [4]byte {
	n := i / 254
	return [4]byte{10, byte(n / 256), byte(n % 256), byte(i%254 + 1)}
}

// peer is the i-th peer address in 198.18.0.0/15.
func peer(i int) [4]byte {
	return [4]byte{198, 18 + byte(i>>16&1), byte(i >> 8), byte(i)}
}

func send(args []string) error {
	fs := flag.NewFlagSet("send", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:2055", "listener address")
	rate := fs.Int("rate", 10000, "flows per second")
	dur := fs.Duration("duration", 10*time.Second, "how long to send")
	devices := fs.Int("devices", 10000, "distinct device (source) addresses")
	peers := fs.Int("peers", 1000, "distinct peer addresses")
	offset := fs.Int("offset", 0, "first (device, peer) pair of the cycle")
	sourceID := fs.Uint("source-id", 1, "NetFlow v9 source id")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rate < 1 || *devices < 1 || *devices > 254*65536 || *peers < 1 || *peers > 1<<17 || *dur <= 0 {
		return errors.New("send: want --rate >= 1, --devices 1..16646144, --peers 1..131072, --duration > 0")
	}
	conn, err := net.Dial("udp", *addr)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	defer conn.Close()

	// One datagram built by flowgen; each send rewrites its sequence
	// number and its records' addresses in place.
	recs := make([]fg.Rec, recsPerDatagram)
	for i := range recs {
		recs[i] = fg.Rec{Src: netip.AddrFrom4(device(0)), Dst: netip.AddrFrom4(peer(0)), Proto: 6, SrcPort: 40000, DstPort: 443, Bytes: 1500, Packets: 3}
	}
	data := fg.NewV9(0, uint32(*sourceID)).Data(256, fg.V4, recs, 0).Bytes()
	recLen := len(fg.AppendRecord(nil, fg.V4, recs[0]))
	const first = 20 + 4 // v9 header, data set header
	if len(data) != first+recsPerDatagram*recLen {
		return fmt.Errorf("send: datagram of %d bytes, want %d", len(data), first+recsPerDatagram*recLen)
	}
	template := func(seq uint32) []byte { return fg.NewV9(seq, uint32(*sourceID)).Template(256, fg.V4).Bytes() }

	pairs := *devices * *peers
	pair := *offset % pairs
	var seq uint32
	var flows, datagrams int
	total := int(int64(*rate)*int64(*dur)/int64(time.Second)) / recsPerDatagram * recsPerDatagram
	start := time.Now()
	write := func(b []byte) error {
		for {
			_, err := conn.Write(b)
			if err == nil {
				datagrams++
				seq++
				return nil
			}
			// ECONNREFUSED from an earlier datagram's ICMP: the
			// listener is not up (yet); a full socket buffer: retry.
			if time.Since(start) > *dur+10*time.Second {
				return fmt.Errorf("send: %w", err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for flows < total {
		if datagrams%16 == 0 {
			if err := write(template(seq)); err != nil {
				return err
			}
		}
		binary.BigEndian.PutUint32(data[12:], seq)
		for i := range recsPerDatagram {
			d, p := device(pair%*devices), peer(pair / *devices % *peers)
			o := first + i*recLen
			copy(data[o:o+4], d[:])
			copy(data[o+4:o+8], p[:])
			pair = (pair + 1) % pairs
		}
		if err := write(data); err != nil {
			return err
		}
		flows += recsPerDatagram
		due := start.Add(time.Duration(float64(flows) / float64(*rate) * float64(time.Second)))
		if ahead := time.Until(due); ahead > time.Millisecond {
			time.Sleep(ahead)
		}
	}
	took := time.Since(start)
	fmt.Printf("sent %d flows in %d datagrams in %.2fs (%.0f flows/s)\n", flows, datagrams, took.Seconds(), float64(flows)/took.Seconds())
	return nil
}

func countGoflow(args []string) error {
	fs := flag.NewFlagSet("count-goflow", flag.ExitOnError)
	file := fs.String("file", "", "goflow2 -format bin output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*file)
	if err != nil {
		return fmt.Errorf("count-goflow: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	n := 0
	for {
		size, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("count-goflow: message %d: %w", n, err)
		}
		if _, err := r.Discard(int(size)); err != nil {
			return fmt.Errorf("count-goflow: message %d cut short: %w", n, err)
		}
		n++
	}
	fmt.Println(n)
	return nil
}
