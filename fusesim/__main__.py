from fusesim.cli import main

raise SystemExit(main())
