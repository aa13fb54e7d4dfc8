module perflab/scimark

go 1.21
