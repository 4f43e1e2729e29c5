# The plot of `make bench`: per kernel, gpujit's speed-up over C/OpenMP and
# over the plain LuaJIT loop (log scale), with the goals as black marks.
#   gnuplot -e "dat='build/bench/results.dat'; out='bench/results.png'" bench/plot.gp
# dat: lines "kernel vs_c vs_lua goal_lua" (bench/bench.lua writes it, and its
# title in dat.'.title').
if (!exists("dat")) dat = 'build/bench/results.dat'
if (!exists("out")) out = 'bench/results.png'
title = system("cat '".dat.".title'")

set terminal pngcairo size 900,480 font "DejaVu Sans,10" noenhanced
set output out
set title title
set logscale y 2
set yrange [0.0625:64]
set ytics (0.0625, 0.125, 0.25, 0.5, 0.9, 1, 2, 4, 8, 16, 32, 64)
set ylabel "speed-up of gpujit (x, log scale; > 1: gpujit faster)"
set grid ytics
set style fill solid 0.8 border -1
set key top left
set xrange [-0.6:*]
set offsets 0, 0.6, 0, 0
set boxwidth 0.36

plot dat using 0:(NaN):xtic(1) notitle, \
     dat using ($0 - 0.2):2 with boxes lc rgb "#4477aa" title "vs C/OpenMP, same threads", \
     dat using ($0 + 0.2):3 with boxes lc rgb "#ee8866" title "vs plain LuaJIT loop (1 thread)", \
     dat using ($0 - 0.2):(0.9):(0.18) with xerrorbars pt -1 lw 3 lc rgb "black" \
         title "goals (0.9x C; 2x/4x LuaJIT)", \
     dat using ($0 + 0.2):4:(0.18) with xerrorbars pt -1 lw 3 lc rgb "black" notitle, \
     dat using ($0 - 0.2):2:(sprintf("%.2f", $2)) with labels offset 0,0.7 notitle, \
     dat using ($0 + 0.2):3:(sprintf("%.1f", $3)) with labels offset 0,0.7 notitle
