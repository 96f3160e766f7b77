# Megatron-LM arguments for Llama-3-8B on one node of 8 H100s, after
# examples/llama/train_llama3_8b_h100_fp8.sh in NVIDIA/Megatron-LM (bf16
# here, TP 2 with sequence parallelism, selective recomputation).
#   ridgeline predict --model llama3_8b --from-megatron plans/megatron_llama3_8b.sh --print-plan
# Ridgeline reads the arguments as text: the model arguments are checked
# against --model, learning rates and paths are listed as ignored, and a
# relevant argument whose value is a shell variable ($TP) is an error.
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \
    --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 \
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 \
    --seq-length 8192 --max-position-embeddings 8192 \
    --position-embedding-type rope --swiglu \
    --micro-batch-size 1 --global-batch-size 128 \
    --train-samples 1953125000 \
    --lr 0.00015 --min-lr 0.00001 --lr-decay-style cosine \
    --bf16 \
    --tensor-model-parallel-size 2 --sequence-parallel \
    --recompute-granularity selective \
    --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \
    --save "$CHECKPOINT_PATH" --log-interval 1
