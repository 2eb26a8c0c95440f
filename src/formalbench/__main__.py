from formalbench.cli.main import main

main()
