from xtc_katas.cli import main

raise SystemExit(main())
