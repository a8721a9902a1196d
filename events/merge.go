package events

// Kinds of the user events that join and separate devices.
const (
	// KindDeviceMerged records a user joining one device (Device) into
	// another (Into): the inventory shows them as Into from then on.
	KindDeviceMerged = "device.merged"
	// KindDeviceUnmerged records a user separating Device from the
	// device it was merged into (Into), as if never merged.
	KindDeviceUnmerged = "device.unmerged"
)

// DeviceMerged is the payload of device.merged: the ids only, so the
// event stays small and replays decide everything else.
type DeviceMerged struct {
	Device string `json:"device"`
	Into   string `json:"into"`
}

// DeviceUnmerged is the payload of device.unmerged.
type DeviceUnmerged struct {
	Device string `json:"device"`
	Into   string `json:"into"`
}
