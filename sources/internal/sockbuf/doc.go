// Package sockbuf sizes the kernel buffers of the sweep packages' sockets
// (arpsweep, icmpsweep): a fast sweep needs more than the default, and the
// sysctl caps (net.core.wmem_max, rmem_max) are often lower than asked.
package sockbuf
