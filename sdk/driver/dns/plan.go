package dns

// Plans for providers whose API changes one record at a time (REST APIs): given the zone's records and
// the call's canonical input, which records to create and which to delete so that the call means the
// same on every provider. All records are in canonical form.

// PlanAppend returns the records of recs the zone lacks, each once.
func PlanAppend(existing, recs []Record) (add []Record) {
	for _, r := range recs {
		if !containsSame(existing, r) && !containsSame(add, r) {
			add = append(add, r)
		}
	}
	return add
}

// PlanSet returns what makes, for each name and type in recs, the zone's records of that name and type
// exactly recs' ones: the existing records of those names and types to delete (including ones whose
// TTL changes) and the records to create.
func PlanSet(existing, recs []Record) (del, add []Record) {
	type key struct{ name, typ string }
	keys := map[key]bool{}
	for _, r := range recs {
		keys[key{r.Name, r.Type}] = true
	}
	var want []Record
	for _, r := range recs {
		if !containsSame(want, r) {
			want = append(want, r)
		}
	}
	for _, e := range existing {
		if !keys[key{e.Name, e.Type}] {
			continue
		}
		if i := indexSame(want, e); i < 0 || (want[i].TTL != 0 && want[i].TTL != e.TTL) {
			del = append(del, e)
		}
	}
	for _, w := range want {
		if i := indexSame(existing, w); i < 0 || containsSame(del, w) {
			add = append(add, w)
		}
	}
	return del, add
}

// PlanDelete returns the existing records that patterns name (see Matches).
func PlanDelete(existing, patterns []Record) (del []Record) {
	for _, e := range existing {
		for _, p := range patterns {
			if Matches(p, e) {
				del = append(del, e)
				break
			}
		}
	}
	return del
}

func indexSame(list []Record, r Record) int {
	for i, x := range list {
		if Same(x, r) {
			return i
		}
	}
	return -1
}

func containsSame(list []Record, r Record) bool { return indexSame(list, r) >= 0 }
