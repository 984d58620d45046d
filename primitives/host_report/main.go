// Command host_report is the word that describes a machine: its facts, disks, memory, load, boot id and
// failed units. What the machine cannot tell is listed under "unknown", never guessed.
package main

import (
	"slices"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct{}

type disk struct {
	Mount       string  `json:"mount"`
	FSType      string  `json:"fstype"`
	TotalBytes  uint64  `json:"total_bytes"`
	AvailBytes  uint64  `json:"available_bytes"`
	UsedPercent float64 `json:"used_percent"`
	InodesUsed  float64 `json:"inodes_used_percent"`
}

type memory struct {
	TotalBytes     uint64 `json:"total_bytes"`
	AvailableBytes uint64 `json:"available_bytes"`
	SwapTotalBytes uint64 `json:"swap_total_bytes"`
	SwapFreeBytes  uint64 `json:"swap_free_bytes"`
}

type output struct {
	Hostname    string    `json:"hostname"`
	OS          string    `json:"os"`
	OSID        string    `json:"os_id"`
	OSVersion   string    `json:"os_version"`
	Kernel      string    `json:"kernel"`
	Arch        string    `json:"arch"`
	UptimeS     float64   `json:"uptime_s"`
	BootID      string    `json:"boot_id"`
	Load        []float64 `json:"load"`
	CPUs        int       `json:"cpus"`
	Memory      memory    `json:"memory"`
	Disks       []disk    `json:"disks"`
	FailedUnits []string  `json:"failed_units"`
	Unknown     []string  `json:"unknown"`
}

func percent(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(int(float64(part)/float64(whole)*1000+0.5)) / 10
}

func main() {
	word.Run(func(params) (output, error) {
		f, err := word.Sys().Facts()
		if err != nil {
			return output{}, err
		}
		out := output{
			Hostname: f.Hostname, OS: f.OS.PrettyName, OSID: f.OS.ID, OSVersion: f.OS.VersionID,
			Kernel: f.Kernel, Arch: f.Arch, UptimeS: f.UptimeS, BootID: f.BootID, Load: f.Load, CPUs: f.CPUs,
			Memory: memory{f.Memory.Total, f.Memory.Available, f.Memory.SwapTotal, f.Memory.SwapFree},
			Disks:  []disk{}, FailedUnits: []string{}, Unknown: append([]string{}, f.Unknown...),
		}
		if out.Load == nil {
			out.Load = []float64{}
		}
		disks, err := word.Sys().Disks()
		switch {
		case word.IsUnknown(err):
			out.Unknown = append(out.Unknown, "disks")
		case err != nil:
			return output{}, err
		}
		for _, d := range disks {
			out.Disks = append(out.Disks, disk{
				Mount: d.Mount, FSType: d.FSType, TotalBytes: d.Total, AvailBytes: d.Available,
				UsedPercent: percent(d.Total-d.Free, d.Total),
				InodesUsed:  percent(d.Inodes-d.InodesFree, d.Inodes),
			})
		}
		failed, err := word.Systemd().Failed()
		switch {
		case word.IsUnknown(err):
			out.FailedUnits = nil
			out.Unknown = append(out.Unknown, "failed_units")
		case err != nil:
			return output{}, err
		default:
			slices.Sort(failed)
			out.FailedUnits = append(out.FailedUnits, failed...)
		}
		return out, nil
	})
}
