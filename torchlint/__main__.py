from torchlint.lint.cli import main

raise SystemExit(main())
