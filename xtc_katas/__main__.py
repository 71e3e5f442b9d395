from xtc_katas.cli.main import main

raise SystemExit(main())
