// Command labctl builds and removes the jocasta lab for manual use; lab.sh
// wraps it. It must run as root.
//
//	labctl up [-name jlab]     build lab.DefaultSpec, leave it running
//	labctl down [-name jlab]   stop its responders, delete its namespaces
//	labctl show [-name jlab]   print the lab's hosts
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/jocasta/jocasta/sources/lab"
)

const stateDir = "/run/jocasta-lab"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "labctl:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: labctl up|down|show [-name NAME]")
	}
	fl := flag.NewFlagSet("labctl "+args[0], flag.ContinueOnError)
	name := fl.String("name", "jlab", "lab name, also the prefix of its namespaces (at most 8 of a-z, 0-9, -)")
	if err := fl.Parse(args[1:]); err != nil {
		return err
	}
	state := filepath.Join(stateDir, *name+".json")
	switch args[0] {
	case "up":
		l, err := lab.Build(lab.DefaultSpec(), lab.Options{
			Name:     *name,
			Detached: true,
			Logf:     func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
		})
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(l, "", "  ")
		if err != nil {
			return errors.Join(err, l.Close())
		}
		if err := os.MkdirAll(stateDir, 0o700); err != nil {
			return errors.Join(err, l.Close())
		}
		if err := os.WriteFile(state, b, 0o600); err != nil {
			return errors.Join(err, l.Close())
		}
		show(l)
		fmt.Printf("\nEnter the scanner: ip netns exec %s bash\nRemove the lab:    sources/lab/lab.sh down %s\n", l.ScannerNS(), l.Name)
		return nil
	case "down", "show":
		l, err := load(state, *name)
		if err != nil {
			return err
		}
		if args[0] == "show" {
			show(l)
			return nil
		}
		if err := l.Close(); err != nil {
			return err
		}
		if err := os.Remove(state); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		fmt.Printf("lab %s removed\n", l.Name)
		return nil
	}
	return fmt.Errorf("unknown command %q: want up, down or show", args[0])
}

// load reads the state lab.sh up saved; without it, the lab is rebuilt
// from the namespaces named after it so that down still cleans up.
func load(state, name string) (*lab.Lab, error) {
	b, err := os.ReadFile(state)
	if err == nil {
		var l lab.Lab
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("%s: %w", state, err)
		}
		return &l, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	entries, _ := os.ReadDir("/run/netns")
	l := &lab.Lab{Name: name, NS: map[string]string{}}
	for _, e := range entries {
		if rest, ok := strings.CutPrefix(e.Name(), name+"-"); ok {
			l.NS[rest] = e.Name()
		}
	}
	if len(l.NS) == 0 {
		return nil, fmt.Errorf("no lab %q (no %s, no namespaces %s-*)", name, state, name)
	}
	return l, nil
}

func show(l *lab.Lab) {
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "NODE\tNAMESPACE\tIP\tMAC\tRESPONDERS\n")
	fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", lab.NodeScanner, l.NS[lab.NodeScanner], l.Spec.Scanner, l.MACs[lab.NodeScanner], "resolv.conf → dns")
	fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", lab.NodeDNS, l.NS[lab.NodeDNS], l.Spec.DNS, l.MACs[lab.NodeDNS], "dnsmasq :53")
	for _, h := range l.Spec.Hosts {
		var r []string
		if h.DropICMP {
			r = append(r, "drops ICMP")
		}
		if h.DNSName != "" {
			r = append(r, "dns "+h.DNSName)
		}
		if h.MDNSName != "" {
			r = append(r, "mdns "+h.MDNSName+".local")
		}
		if h.DNSSD != nil {
			r = append(r, fmt.Sprintf("dns-sd %s %q :%d", h.DNSSD.Type, h.DNSSD.Name, h.DNSSD.Port))
		}
		if h.NetBIOS != "" {
			r = append(r, "netbios "+h.NetBIOS)
		}
		if h.UPnP != "" {
			r = append(r, fmt.Sprintf("upnp %q :%d", h.UPnP, lab.UPnPPort))
		}
		if len(h.TCPPorts) > 0 {
			r = append(r, fmt.Sprintf("tcp %v", h.TCPPorts))
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", h.Name, l.NS[h.Name], h.IP, l.MACs[h.Name], strings.Join(r, ", "))
	}
	w.Flush()
}
