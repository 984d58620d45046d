-- Reserved: branch planedrivers adds the driver tables as migration 0002. This placeholder lets the
-- incidents branch (0003) load its migrations without a gap until the two meet; whoever merges the
-- second of them deletes this file in both dialects and keeps planedrivers' 0002.
SELECT 1;
