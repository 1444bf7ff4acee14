from segbench.launch import main

main()
