from graymatter_tui.hooks.entry import main

main()
