"""One folder per contribution note: notes/<slug>/note.md, with its repro bench in notes/<slug>/repro/."""
