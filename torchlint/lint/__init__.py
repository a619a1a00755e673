"""The static half of torchlint: files, parsing, shared analysis, rules, reporters, CLI."""
