// Command disk_usage is the word that finds what fills a disk: the largest directories beneath a root
// the manifest declares, summed as du does, to a given depth, capped.
package main

import (
	"path"
	"sort"

	"github.com/lexicon-fleet/lexicon/sdk/word"
)

type params struct {
	Root  string `json:"root"`
	Top   int    `json:"top"`
	Depth int    `json:"depth"`
}

type entry struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	Depth int    `json:"depth"`
}

type output struct {
	Root       string  `json:"root"`
	TotalBytes int64   `json:"total_bytes"`
	Entries    []entry `json:"entries"`
	Truncated  bool    `json:"truncated"`
	Partial    bool    `json:"partial"`
}

func main() {
	word.Run(func(p params) (output, error) {
		top, depth := p.Top, p.Depth
		if top == 0 {
			top = 10
		}
		if depth == 0 {
			depth = 1
		}
		out := output{Root: p.Root, Entries: []entry{}}
		var all []entry
		// Breadth first: each level lists the largest directories of the one above, so the walk costs
		// top calls per level, not one per directory.
		level := []string{p.Root}
		for d := 1; d <= depth && len(level) > 0; d++ {
			var next []entry
			for _, dir := range level {
				l, err := word.FS().ListSizes(dir, 0)
				if err != nil {
					if d > 1 && (word.IsDenied(err) || word.IsNotFound(err)) {
						out.Partial = true
						continue
					}
					return output{}, err
				}
				out.Truncated = out.Truncated || l.Truncated
				out.Partial = out.Partial || l.Partial
				for _, e := range l.Entries {
					if d == 1 {
						out.TotalBytes += e.Size
					}
					if e.Type == "dir" {
						next = append(next, entry{Path: path.Join(dir, e.Name), Bytes: e.Size, Depth: d})
					}
				}
			}
			sort.Slice(next, func(i, j int) bool {
				if next[i].Bytes != next[j].Bytes {
					return next[i].Bytes > next[j].Bytes
				}
				return next[i].Path < next[j].Path
			})
			if len(next) > top {
				next = next[:top]
			}
			all = append(all, next...)
			level = level[:0]
			for _, e := range next {
				level = append(level, e.Path)
			}
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].Bytes > all[j].Bytes })
		if len(all) > top {
			all, out.Truncated = all[:top], true
		}
		out.Entries = append(out.Entries, all...)
		return out, nil
	})
}
