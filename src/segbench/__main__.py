from segbench.cli import main

main()
