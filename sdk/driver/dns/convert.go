package dns

import (
	"time"

	dnspb "github.com/lexicon-fleet/lexicon/sdk/driver/dns/proto"
)

// Conversions between the Go contract and its wire form, shared by client.go and server.go.

func recordsToPB(recs []Record) []*dnspb.Record {
	out := make([]*dnspb.Record, 0, len(recs))
	for _, r := range recs {
		out = append(out, &dnspb.Record{
			Id: r.ID, Type: r.Type, Name: r.Name, Value: r.Value,
			TtlSeconds: int64(r.TTL / time.Second), Priority: uint32(r.Priority),
		})
	}
	return out
}

func recordsFromPB(recs []*dnspb.Record) []Record {
	out := make([]Record, 0, len(recs))
	for _, r := range recs {
		ttl := r.GetTtlSeconds()
		if ttl < 0 || ttl > int64(MaxTTL/time.Second) {
			ttl = -1 // out of range: Normalize refuses it instead of wrapping around
		}
		prio := r.GetPriority()
		if prio > 0xffff {
			prio = 0xffff
		}
		out = append(out, Record{
			ID: r.GetId(), Type: r.GetType(), Name: r.GetName(), Value: r.GetValue(),
			TTL: time.Duration(ttl) * time.Second, Priority: uint16(prio),
		})
	}
	return out
}
